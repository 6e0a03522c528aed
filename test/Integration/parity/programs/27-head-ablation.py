"""nnsight twin of 27-head-ablation.nns: the same write through a view of o_proj's input."""
PROGRAM = "test/Integration/parity/programs/27-head-ablation.nns"
PROMPTS = ["alice"]
STEPS = 4
HEADS, HEAD_DIM = 9, 64


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        head, r = list().save(), list().save()
        for step in tracer.iter[0:steps]:
            for i in range(4, 9):
                lm.model.layers[i].self_attn.o_proj.input.view(1, -1, HEADS, HEAD_DIM)[:, :, 3] = 0
            head.append(lm.model.layers[9].self_attn.o_proj.input.view(1, -1, HEADS, HEAD_DIM)[0, -1, 3])
            r.append(lm.model.layers[20].output[0, -1])
        result = tracer.result.save()
    saves = {f"head.{s}": v for s, v in enumerate(head)}
    saves.update({f"r.{s}": v for s, v in enumerate(r)})
    return [saves], result

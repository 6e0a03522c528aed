"""nnsight twin of 16-attention-output.nns. In transformers the attention block returns
(output, weights); the nns site is the first element."""
PROGRAM = "test/Integration/parity/programs/16-attention-output.nns"
PROMPTS = ["alice"]
STEPS = 4


def nnsight(lm, prompts, params, steps):
    saves = {}
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        heads, attn = list().save(), list().save()
        for step in tracer.iter[0:3]:
            heads.append(lm.model.layers[4].self_attn.o_proj.input[0, -1])
            attn.append(lm.model.layers[4].self_attn.output[0][0])
        result = tracer.result.save()
    for s in range(3):
        saves[f"heads.{s}"], saves[f"attn.{s}"] = heads[s], attn[s]
    return [saves], result

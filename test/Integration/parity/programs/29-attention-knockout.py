"""nnsight twin of 29-attention-knockout.nns: an in-place write into eager attention's softmax."""
PROGRAM = "test/Integration/parity/programs/29-attention-knockout.nns"
PROMPTS = ["alice"]
STEPS = 4
CHANGES_TOKENS = True

import attention_source  # noqa: E402


def nnsight(lm, prompts, params, steps):
    previous = attention_source.eager(lm)
    try:
        with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
            r, p = list().save(), list().save()
            for step in tracer.iter[0:steps]:
                for i in range(30):
                    attention_source.pattern(lm, i)[0, 7, :, 0] = 0
                    if i == 20:
                        r.append(lm.model.layers[20].output[0, -1])
                p.append(attention_source.pattern(lm, 29)[0, 7, -1])
            result = tracer.result.save()
    finally:
        lm._module.set_attn_implementation(previous)
    saves = {f"r.{s}": v for s, v in enumerate(r)}
    saves.update({f"p.{s}": v for s, v in enumerate(p)})
    return [saves], result

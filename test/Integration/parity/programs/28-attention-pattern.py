"""nnsight twin of 28-attention-pattern.nns: the softmax inside eager attention, via .source."""
PROGRAM = "test/Integration/parity/programs/28-attention-pattern.nns"
PROMPTS = ["alice"]
STEPS = 3

from attention_source import eager, pattern  # noqa: E402


def nnsight(lm, prompts, params, steps):
    previous = eager(lm)
    try:
        with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
            p, last = list().save(), list().save()
            for step in tracer.iter[0:3]:
                p.append(pattern(lm, 3)[0])
                last.append(pattern(lm, 20)[0, 4, -1])
            result = tracer.result.save()
    finally:
        lm._module.set_attn_implementation(previous)
    saves = {f"p.{s}": v for s, v in enumerate(p)}
    saves.update({f"last.{s}": v for s, v in enumerate(last)})
    return [saves], result

"""nnsight twin of examples/canonical/06-top-logits.nns: the argmax of the sampled position's
logits at steps 0-4, saved per step as top.<step>."""
PROGRAM = "examples/canonical/06-top-logits.nns"
PROMPTS = ["alice"]
STEPS = 5


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        top = list().save()
        for step in tracer.iter[0:5]:
            top.append(lm.lm_head.output[0, -1].argmax(-1))
        result = tracer.result.save()
    return [{f"top.{s}": t for s, t in enumerate(top)}], result

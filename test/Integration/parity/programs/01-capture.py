"""nnsight twin of examples/canonical/01-capture.nns: the last-token residual after layer 8."""
PROGRAM = "examples/canonical/01-capture.nns"
PROMPTS = ["france"]
STEPS = 3


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        h = lm.model.layers[8].output[0, -1].save()
        result = tracer.result.save()
    return [{"h": h}], result

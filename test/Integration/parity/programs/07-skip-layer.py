"""nnsight twin of examples/canonical/07-skip-layer.nns: layer 7 does not run in the prompt pass;
its output is layer 6's output."""
PROGRAM = "examples/canonical/07-skip-layer.nns"
PROMPTS = ["italy"]
STEPS = 4
CHANGES_TOKENS = True


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        lm.model.layers[7].skip(lm.model.layers[6].output)
        result = tracer.result.save()
    return [{}], result

"""nnsight twin of examples/canonical/10-cache-layers.nns: every layer's output for the prompt,
saved under its full path."""
PROGRAM = "examples/canonical/10-cache-layers.nns"
PROMPTS = ["tower"]
STEPS = 2


def nnsight(lm, prompts, params, steps):
    cache = {}
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        for i in range(len(lm.model.layers)):
            cache[f"model.layers.{i}.output"] = lm.model.layers[i].output[0].save()
        result = tracer.result.save()
    return [cache], result

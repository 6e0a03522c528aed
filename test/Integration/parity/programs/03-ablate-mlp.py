"""nnsight twin of examples/canonical/03-ablate-mlp.nns: layer 3's MLP output zeroed at every
step."""
PROGRAM = "examples/canonical/03-ablate-mlp.nns"
PROMPTS = ["tower"]
STEPS = 5
CHANGES_TOKENS = True


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        for step in tracer.iter[0:steps]:
            lm.model.layers[3].mlp.output = lm.model.layers[3].mlp.output * 0
        result = tracer.result.save()
    return [{}], result

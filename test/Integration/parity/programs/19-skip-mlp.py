"""nnsight twin of 19-skip-mlp.nns."""
PROGRAM = "test/Integration/parity/programs/19-skip-mlp.nns"
PROMPTS = ["tower"]
STEPS = 3
CHANGES_TOKENS = True


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        h = list().save()
        for step in tracer.iter[0:steps]:
            lm.model.layers[2].mlp.skip(lm.model.layers[2].mlp.input * 0.5)
            h.append(lm.model.layers[2].output[0, -1])
        result = tracer.result.save()
    return [{f"h.{s}": v for s, v in enumerate(h)}], result

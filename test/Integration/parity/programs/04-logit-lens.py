"""nnsight twin of examples/canonical/04-logit-lens.nns: the final norm and lm_head applied to
the last-token residual after layers 0 and 15 (module calls without hooks)."""
PROGRAM = "examples/canonical/04-logit-lens.nns"
PROMPTS = ["france"]
STEPS = 2


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        l0 = lm.lm_head(lm.model.norm(lm.model.layers[0].output[0, -1])).argmax(-1).save()
        l15 = lm.lm_head(lm.model.norm(lm.model.layers[15].output[0, -1])).argmax(-1).save()
        result = tracer.result.save()
    return [{"l0": l0, "l15": l15}], result

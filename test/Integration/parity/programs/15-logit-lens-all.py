"""nnsight twin of 15-logit-lens-all.nns."""
PROGRAM = "test/Integration/parity/programs/15-logit-lens-all.nns"
PROMPTS = ["tower"]
STEPS = 2


def nnsight(lm, prompts, params, steps):
    saves = {}
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        for i in range(30):
            last = lm.model.layers[i].output[0, -1]
            saves[f"lens.{i}"] = lm.lm_head(lm.model.norm(last)).log_softmax(-1).save()
        result = tracer.result.save()
    return [saves], result

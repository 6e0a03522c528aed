"""nnsight twin of 26-directional-ablation.nns; d is the unit direction of layer 10's mean
residual over another prompt (a direction the model uses, so ablating it changes the tokens)."""
PROGRAM = "test/Integration/parity/programs/26-directional-ablation.nns"
PROMPTS = ["france"]
STEPS = 4
CHANGES_TOKENS = True


def params(ctx):
    mean = ctx.plain_site("tower", 10).mean(0)
    return {"d": mean / mean.norm()}


def nnsight(lm, prompts, params, steps):
    d = params["d"]
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        r = list().save()
        for step in tracer.iter[0:steps]:
            for i in range(30):
                h = lm.model.layers[i].output[0]
                lm.model.layers[i].output[0][:] = h - (h @ d).unsqueeze(-1) * d
            r.append(lm.model.layers[-1].output[0, -1])
        result = tracer.result.save()
    return [{f"r.{s}": v for s, v in enumerate(r)}], result

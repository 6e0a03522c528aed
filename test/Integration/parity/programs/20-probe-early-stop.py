"""nnsight twin of 20-probe-early-stop.nns."""
PROGRAM = "test/Integration/parity/programs/20-probe-early-stop.nns"
PROMPTS = ["france"]
STEPS = 4
STOPS = True


def params(ctx):
    return {"dir": ctx.unit_vector() * 0.2}


def nnsight(lm, prompts, params, steps):
    with lm.trace(prompts) as tracer:
        h = lm.model.layers[4].output[0]
        p = (h @ params["dir"]).sigmoid().save()
        n = h.norm(dim=-1).save()
        tracer.stop()
    return [{"p": p, "n": n}], None

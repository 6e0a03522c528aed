"""nnsight twin of examples/canonical/05-probe-stop.nns: layer 10's residual projected on a
direction at every prompt position, then the run stops (no token is generated)."""
PROGRAM = "examples/canonical/05-probe-stop.nns"
PROMPTS = ["tower"]
STEPS = 4
STOPS = True


def params(ctx):
    return {"dir": ctx.unit_vector()}


def nnsight(lm, prompts, params, steps):
    with lm.trace(prompts) as tracer:
        score = (lm.model.layers[10].output[0] @ params["dir"]).save()
        tracer.stop()
    return [{"score": score}], None

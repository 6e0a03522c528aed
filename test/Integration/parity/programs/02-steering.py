"""nnsight twin of examples/canonical/02-steering.nns: layer 12's output plus alpha * steer at
every step (the prompt pass and each generated token); |alpha * steer| is the norm of the
plain run's layer-12 output at the last prompt token."""
PROGRAM = "examples/canonical/02-steering.nns"
PROMPTS = ["france"]
STEPS = 4
CHANGES_TOKENS = True


def params(ctx):
    return {"steer": ctx.unit_vector() * (ctx.last_token_norm("france", 12) / 4.0)}


def nnsight(lm, prompts, params, steps):
    alpha, steer = 4.0, params["steer"]
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        for step in tracer.iter[0:steps]:
            lm.model.layers[12].output += alpha * steer
        result = tracer.result.save()
    return [{}], result

"""nnsight twin of 17-steer-slice.nns."""
PROGRAM = "test/Integration/parity/programs/17-steer-slice.nns"
PROMPTS = ["france"]
STEPS = 5
CHANGES_TOKENS = True


def params(ctx):
    return {"steer": ctx.unit_vector() * 25.0}


def nnsight(lm, prompts, params, steps):
    alpha, steer = 6.0, params["steer"]
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        top = list().save()
        for step in tracer.iter[2:4]:
            lm.model.layers[8].output[0, -1] += alpha * steer
            top.append(lm.lm_head.output[0, -1].argmax(-1))
        result = tracer.result.save()
    return [{"top.2": top[0], "top.3": top[1]}], result

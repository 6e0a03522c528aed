"""nnsight twin of examples/canonical/08-ban-token.nns: the banned token's logit set to -1e9 at
every step. The banned token is the plain run's first greedy token, so the ban matters."""
PROGRAM = "examples/canonical/08-ban-token.nns"
PROMPTS = ["france"]
STEPS = 4
CHANGES_TOKENS = True


def params(ctx):
    return {"banned": ctx.plain_tokens("france")[0]}


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        for step in tracer.iter[0:steps]:
            lm.lm_head.output[0, -1, params["banned"]] = -1e9
        result = tracer.result.save()
    return [{}], result

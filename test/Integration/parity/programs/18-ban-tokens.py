"""nnsight twin of 18-ban-tokens.nns; the banned tokens are the plain run's first two greedy
tokens."""
PROGRAM = "test/Integration/parity/programs/18-ban-tokens.nns"
PROMPTS = ["alice"]
STEPS = 4
CHANGES_TOKENS = True


def params(ctx):
    plain = ctx.plain_tokens("alice")
    return {"first": plain[0], "second": plain[1]}


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        best = list().save()
        for step in tracer.iter[0:steps]:
            lm.lm_head.output[0, -1, params["first"]] = -1e9
            lm.lm_head.output[0, -1, params["second"]] = -1e9
            best.append(lm.lm_head.output[0, -1].max())
        result = tracer.result.save()
    return [{f"best.{s}": v for s, v in enumerate(best)}], result

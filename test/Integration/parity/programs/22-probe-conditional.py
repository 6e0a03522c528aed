"""nnsight twin of 22-probe-conditional.nns. The probe points from the plain run's later
last-token states to the prompt pass's and the threshold sits just below the prompt pass's
projection, so step 0 bans the plain run's first token; the check below sees the condition both
hold and fail."""
PROGRAM = "test/Integration/parity/programs/22-probe-conditional.nns"
PROMPTS = ["tower"]
STEPS = 5
CHANGES_TOKENS = True


def params(ctx):
    rows = ctx.plain_last_rows("tower", 6)
    probe = rows[0] - rows[1:].mean(0)
    probe = probe / probe.norm()
    first = float(rows[0] @ probe)
    return {"probe": probe, "threshold": first - 0.05, "banned": ctx.plain_tokens("tower")[0]}


def nnsight(lm, prompts, params, steps):
    fired = []
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        p = list().save()
        for step in tracer.iter[0:steps]:
            value = lm.model.layers[6].output[0, -1] @ params["probe"]
            p.append(value)
            if value > params["threshold"]:
                lm.lm_head.output[0, -1, params["banned"]] = -1e9
        result = tracer.result.save()
    fired = [bool(v > params["threshold"]) for v in p]
    assert any(fired) and not all(fired), f"the probe condition never changed: {fired}"
    return [{f"p.{s}": v for s, v in enumerate(p)}], result

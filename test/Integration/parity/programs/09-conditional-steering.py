"""nnsight twin of examples/canonical/09-conditional-steering.nns: layer 9's output plus steer
at the steps where the last token's projection on probe exceeds 0.5 (a Python `if` on the real
value, as nnsight 0.8 runs the trace body on real tensors). The probe points from the plain run's
later last-token states to the prompt pass's, scaled so the prompt pass projects to 0.6 (fires);
the check below sees the condition both hold and fail."""
PROGRAM = "examples/canonical/09-conditional-steering.nns"
PROMPTS = ["alice"]
STEPS = 5
CHANGES_TOKENS = True


def params(ctx):
    rows = ctx.plain_last_rows("alice", 9)
    probe = rows[0] - rows[1:].mean(0)
    return {"probe": probe * (0.6 / float(rows[0] @ probe)), "steer": ctx.unit_vector() * 60.0}


def nnsight(lm, prompts, params, steps):
    probe, steer = params["probe"], params["steer"]
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        fired = list().save()
        for step in tracer.iter[0:steps]:
            if (lm.model.layers[9].output[0, -1] @ probe) > 0.5:
                lm.model.layers[9].output += steer
                fired.append(True)
            else:
                fired.append(False)
        result = tracer.result.save()
    assert any(fired) and not all(fired), f"the probe condition never changed: {fired}"
    return [{}], result

"""nnsight twin of examples/canonical/09-conditional-steering.nns: layer 9's output plus steer
at the steps where the last token's projection on probe exceeds 0.5 (a Python `if` on the real
value, as nnsight 0.8 runs the trace body on real tensors). The probe is chosen so that the plain
run's prompt pass projects to 0.6 (fires) and its later last-token states to 0.4 on average; the
check below sees the condition both hold and fail."""
import torch

PROGRAM = "examples/canonical/09-conditional-steering.nns"
PROMPTS = ["alice"]
STEPS = 5
CHANGES_TOKENS = True


def params(ctx):
    rows = ctx.plain_last_rows("alice", 9)
    first, later = rows[0], rows[1:].mean(0)
    # probe = a (first - later) + b later with first @ probe = 0.6 and later @ probe = 0.4:
    # the prompt pass fires, the plain run's later states on average do not, also where the
    # states share a large common component (Gemma's residual stream).
    diff = first - later
    system = torch.tensor([[float(first @ diff), float(first @ later)],
                           [float(later @ diff), float(later @ later)]], dtype=torch.float64)
    a, b = torch.linalg.solve(system, torch.tensor([0.6, 0.4], dtype=torch.float64)).tolist()
    steer = ctx.unit_vector() * (0.5 * ctx.last_token_norm("alice", 9))
    return {"probe": a * diff + b * later, "steer": steer}


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

"""nnsight twin of 14-mean-ablation.nns; the mean is layer 1's MLP output averaged over every
position of two other prompts (computed with nnsight)."""
import torch

PROGRAM = "test/Integration/parity/programs/14-mean-ablation.nns"
PROMPTS = ["alice"]
STEPS = 3
CHANGES_TOKENS = True


def params(ctx):
    rows = []
    for name in ("france", "tower"):
        with ctx.lm.trace([ctx.prompts[name]]):
            rows.append(ctx.lm.model.layers[1].mlp.output[0].save())
    return {"mean": torch.cat(rows).mean(0).detach()}


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        h = list().save()
        for step in tracer.iter[0:steps]:
            lm.model.layers[1].mlp.output[:] = params["mean"]
            h.append(lm.model.layers[20].output[0, -1])
        result = tracer.result.save()
    return [{f"h.{s}": v for s, v in enumerate(h)}], result

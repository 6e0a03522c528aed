"""Reference cases for the canonical programs (examples/canonical/*.nns) on the tiny Qwen3.

`canonical_cases.py CONFIG_DIR OUT_DIR [invoke-error]` writes a random tiny model of CONFIG_DIR's config
(transformers, save_pretrained) to OUT_DIR/tiny-qwen3 and OUT_DIR/canonical.json: for each
program, random flat site tensors holding several groups (mixed token counts, steps, params,
invokes) and what the program leaves in them and saves, evaluated here in torch (module calls
with the transformers model's own modules). Out-of-range indices (h[5] with T=3, logits[vocab])
and a param of the wrong shape must fail that request only and leave its rows untouched. The
bundles are compiled by the lit test; NNSCDifferentialTests replays the case against them.
"""
import os
import sys

import torch

from diff_case import CaseFile, layout, tiny_model

config_dir, out = sys.argv[1], sys.argv[2]
model = tiny_model(config_dir, os.path.join(out, "tiny-qwen3"))
D, V, L = model.config.hidden_size, model.config.vocab_size, model.config.num_hidden_layers
torch.manual_seed(0)
case = CaseFile("tiny-qwen3")


def program(name, trace=""):
    return case.program(name, f"{name}.nnsb", trace)


def groups(spans, requests, steps, invokes=None):
    invokes = invokes or [0] * len(spans)
    return [dict(request=r, row=row, rows=n, step=s, invoke=i)
            for (row, n), r, s, i in zip(spans, requests, steps, invokes)]


def token_site(counts):
    """A flat site tensor for sequences of `counts` tokens."""
    return layout([torch.randn(n, D) for n in counts])


def capture():
    p = program("01-capture")
    for r in (1, 2, 3):
        p.request(r, {})
    x, spans = token_site([3, 1, 5])
    p.tick()
    p.call("model.layers.8.output", x, x, groups(spans, [1, 2, 3], [0, 0, 2]))
    for (row, n), r in zip(spans[:2], [1, 2]):
        p.save(r, "h", x[row + n - 1])


def steering():
    p = program("02-steering")
    steer, alpha = torch.randn(D), torch.tensor(2.5)
    p.request(1, dict(steer=steer, alpha=alpha))
    p.request(2, dict(steer=steer))  # alpha takes its default, 4.0
    p.request(3, dict(steer=steer, alpha=alpha))
    p.request(9, dict(steer=torch.randn(D + 1), alpha=alpha))
    x, spans = token_site([4, 1, 2, 3])
    want = x.clone()
    for (row, n), a in zip(spans[:3], [2.5, 4.0, 2.5]):
        want[row:row + n] += a * steer
    p.tick()
    p.call("model.layers.12.output", x, want, groups(spans, [1, 2, 3, 9], [0, 3, 1, 0]))
    p.error(9, "param 'steer'")


def ablate():
    p = program("03-ablate-mlp")
    p.request(1, {})
    p.request(2, {})
    x, spans = token_site([2, 3])
    want = x.clone()
    for row, n in spans:
        want[row:row + n] = 0
    p.tick()
    p.call("model.layers.3.mlp.output", x, want, groups(spans, [1, 2], [0, 4]))


def logit_lens():
    p = program("04-logit-lens")
    p.request(1, {})
    p.request(2, {})
    p.tick()
    for layer, name in [(0, "l0"), (L - 1, "l15")]:
        x, spans = token_site([3, 2])
        p.call(f"model.layers.{layer}.output", x, x, groups(spans, [1, 2], [0, 0]))
        with torch.no_grad():
            for (row, n), r in zip(spans, [1, 2]):
                p.save(r, name, model.lm_head(model.model.norm(x[row + n - 1])).argmax())


def probe():
    p = program("05-probe-stop")
    direction = torch.randn(D)
    p.request(1, dict(dir=direction))
    p.request(2, dict(dir=direction))
    x, spans = token_site([3, 6])
    p.tick()
    p.call("model.layers.10.output", x, x, groups(spans, [1, 2], [0, 0]))
    for (row, n), r in zip(spans, [1, 2]):
        p.save(r, "score", x[row:row + n] @ direction)
        p.stop(r, 0)


def logits_site(n):
    """The logits site: one row per sampling sequence, no padding (the runtime passes exactly
    the sampled rows)."""
    return torch.randn(n, V), [(i, 1) for i in range(n)]


def top_logits():
    p = program("06-top-logits")
    for r in (1, 2, 3):
        p.request(r, {})
    x, spans = logits_site(3)
    p.tick()
    p.call("logits", x, x, groups(spans, [1, 2, 3], [0, 4, 5]))
    for r, step in [(1, 0), (2, 4)]:
        p.save(r, f"top.{step}", x[r - 1].argmax())


def skip():
    p = program("07-skip-layer")
    p.request(1, {})
    p.request(2, {})
    x6, spans = token_site([3, 2])
    x7, _ = token_site([3, 2])
    want = x7.clone()
    for row, n in spans:
        want[row:row + n] = x6[row:row + n]
    p.tick()
    p.call("model.layers.6.output", x6, x6, groups(spans, [1, 2], [0, 0]))
    p.call("model.layers.7.input", x7, want, groups(spans, [1, 2], [0, 0]))


def ban():
    p = program("08-ban-token")
    p.request(1, dict(banned=torch.tensor(123)))
    p.request(2, dict(banned=torch.tensor(-5)))
    p.request(7, dict(banned=torch.tensor(V)))
    x, spans = logits_site(3)
    want = x.clone()
    want[0, 123] = -1e9
    want[1, V - 5] = -1e9
    p.tick()
    p.call("logits", x, want, groups(spans, [1, 2, 7], [0, 7, 2]))
    p.error(7, f"index {V} is out of range for dimension 0 of size {V} at site 'logits'")


def conditional():
    p = program("09-conditional-steering")
    probe_v, steer = torch.randn(D), torch.randn(D)
    for r in (1, 2, 3, 4):
        p.request(r, dict(probe=probe_v, steer=steer))
    x, spans = token_site([3, 1, 2, 4])
    want = x.clone()
    for row, n in spans:
        if x[row + n - 1] @ probe_v > 0.5:
            want[row:row + n] += steer
    p.tick()
    p.call("model.layers.9.output", x, want, groups(spans, [1, 2, 3, 4], [0, 1, 2, 3]))


def cache():
    p = program("10-cache-layers")
    p.request(1, {})
    p.request(2, {})
    p.tick()
    for layer in range(L):
        x, spans = token_site([3, 2])
        p.call(f"model.layers.{layer}.output", x, x, groups(spans, [1, 2], [0, 0]))
        for (row, n), r in zip(spans, [1, 2]):
            p.save(r, f"model.layers.{layer}.output", x[row:row + n])


def patching(failing_corrupt=False):
    """`failing_corrupt`: request 4's corrupt prompt is in the same kernel call as its failing
    clean prompt, whose error must skip it too (random-invoke-error.nns)."""
    p = program("11-patching", "patch")
    tok_a, tok_b = 10, 200
    p.request(1, dict(tok_a=torch.tensor(tok_a), tok_b=torch.tensor(tok_b)))
    p.request(4, dict(tok_a=torch.tensor(tok_a), tok_b=torch.tensor(tok_b)))
    # Request 1: clean (7 tokens) and corrupt (6); request 4: a clean prompt of 3 tokens, where
    # h[5] is out of range.
    counts, requests, invokes = [7, 6, 3], [1, 1, 4], [0, 1, 0]
    if failing_corrupt:
        counts, requests, invokes = counts + [6], requests + [4], invokes + [1]
    x, spans = token_site(counts)
    want = x.clone()
    want[spans[1][0] + 5] = x[spans[0][0] + 5]
    p.tick()
    p.call("model.layers.6.output", x, want,
           groups(spans, requests, [0] * len(counts), invokes))
    logits, lspans = logits_site(2)
    p.call("logits", logits, logits, groups(lspans, [1, 1], [0, 0], [0, 1]))
    p.save(1, "diff", logits[1, tok_a] - logits[1, tok_b])
    p.error(4, "index 5 is out of range for dimension 0 of size 3 at site "
            "'model.layers.6.output'")


if sys.argv[3:] == ["invoke-error"]:
    patching(failing_corrupt=True)
else:
    for make in [capture, steering, ablate, logit_lens, probe, top_logits, skip, ban,
                 conditional, cache, patching]:
        make()
case.write(os.path.join(out, "canonical.json"))
print(f"{len(case.programs)} canonical cases")

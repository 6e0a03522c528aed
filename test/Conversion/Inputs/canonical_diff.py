"""Differential test of the canonical bundles: kernels vs a direct torch evaluation.

Each program's kernels run on a random flat site tensor holding several groups (mixed token
counts, steps, params); every write and save is compared with the program evaluated in torch.
Usage: canonical_diff.py BUNDLE_DIR
"""
import ctypes as C
import sys

import torch

from bundle_ctypes import BundleRunner

D, V = 576, 49152
torch.manual_seed(0)
failures = []


def check(name, got, want, atol=1e-5):
    if got.shape != want.shape or not torch.allclose(got.float(), want.float(), atol=atol, rtol=1e-5):
        failures.append(f"{name}: got {got.flatten()[:4]} want {want.flatten()[:4]}")


def layout(counts):
    """Groups laid out back to back after a row of padding: [(row, rows)]."""
    rows, out = 1, []
    for n in counts:
        out.append((rows, n))
        rows += n
    return out, rows + 1


def groups_for(counts, steps, params, frames=None):
    spans, total = layout(counts)
    frames = frames or [C.create_string_buffer(4096) for _ in counts]
    return [dict(row=r, rows=n, step=s, params=params, frame=f, request=i + 1)
            for i, ((r, n), s, f) in enumerate(zip(spans, steps, frames))], total


def by_request(runner):
    out = {}
    for request, index, step, value in runner.saves:
        out.setdefault(request, []).append((index, step, value))
    return out


def capture(d):
    r = BundleRunner(f"{d}/01-capture.nnsb")
    gs, total = groups_for([3, 1, 5], [0, 0, 2], [])
    x = torch.randn(total, D)
    r.run_site(r.trace(), 0, x, gs)
    saves = by_request(r)
    for g in gs:
        if g["step"] == 0:
            check("capture", saves[g["request"]][0][2], x[g["row"] + g["rows"] - 1])
        elif g["request"] in saves:
            failures.append("capture saved at step 2")


def steering(d):
    r = BundleRunner(f"{d}/02-steering.nnsb")
    steer, alpha = torch.randn(D), torch.tensor(2.5)
    gs, total = groups_for([4, 1, 2], [0, 3, 1], [steer, alpha])
    x = torch.randn(total, D)
    want = x.clone()
    for g in gs:
        want[g["row"]:g["row"] + g["rows"]] += alpha * steer
    r.run_site(r.trace(), 0, x, gs)
    check("steering", x, want)
    # A param of the wrong shape fails that request only.
    bad = dict(gs[0], params=[torch.randn(D + 1), alpha], request=9)
    y = torch.randn(total, D)
    before = y.clone()
    r.run_site(r.trace(), 0, y, [bad])
    check("steering bad param leaves rows", y, before)
    if not any(req == 9 and "param 'steer'" in msg for req, msg in r.errors):
        failures.append(f"steering: no error for a bad param: {r.errors}")


def ablate(d):
    r = BundleRunner(f"{d}/03-ablate-mlp.nnsb")
    gs, total = groups_for([2, 3], [0, 4], [])
    x = torch.randn(total, D)
    want = x.clone()
    for g in gs:
        want[g["row"]:g["row"] + g["rows"]] = 0
    r.run_site(r.trace(), 0, x, gs)
    check("ablate", x, want)


def logit_lens(d):
    norm_w, head = torch.randn(D), torch.randn(V, D) * 0.05
    modules = {393: lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * norm_w,
               394: lambda x: x @ head.T}
    r = BundleRunner(f"{d}/04-logit-lens.nnsb", modules)
    gs, total = groups_for([3, 2], [0, 0], [])
    for site in range(2):
        x = torch.randn(total, D)
        r.saves.clear()
        r.run_site(r.trace(), site, x, gs)
        saves = by_request(r)
        for g in gs:
            last = x[g["row"] + g["rows"] - 1]
            want = modules[394](modules[393](last)).argmax()
            check("logit lens", saves[g["request"]][0][2], want)


def probe(d):
    r = BundleRunner(f"{d}/05-probe-stop.nnsb")
    direction = torch.randn(D)
    gs, total = groups_for([3, 6], [0, 0], [direction])
    x = torch.randn(total, D)
    r.run_site(r.trace(), 0, x, gs)
    saves = by_request(r)
    for g in gs:
        check("probe", saves[g["request"]][0][2], x[g["row"]:g["row"] + g["rows"]] @ direction,
              atol=1e-4)
        if g["request"] not in r.stopped:
            failures.append("probe: stop() not called")


def top_logits(d):
    r = BundleRunner(f"{d}/06-top-logits.nnsb")
    gs, total = groups_for([1, 1, 1], [0, 4, 5], [])
    x = torch.randn(total, V)
    r.run_site(r.trace(), 0, x, gs)
    saves = by_request(r)
    for g in gs:
        if g["step"] < 5:
            check("top", saves[g["request"]][0][2], x[g["row"]].argmax())
            if saves[g["request"]][0][1] != g["step"]:
                failures.append("top: wrong step")
        elif g["request"] in saves:
            failures.append("top: saved at step 5")


def skip(d):
    r = BundleRunner(f"{d}/07-skip-layer.nnsb")
    gs, total = groups_for([3, 2], [0, 0], [])
    x6 = torch.randn(total, D)
    r.run_site(r.trace(), 0, x6, gs)
    x7 = torch.randn(total, D)
    want = x7.clone()
    for g in gs:
        want[g["row"]:g["row"] + g["rows"]] = x6[g["row"]:g["row"] + g["rows"]]
    r.run_site(r.trace(), 1, x7, gs)
    check("skip", x7, want)


def ban(d):
    r = BundleRunner(f"{d}/08-ban-token.nnsb")
    gs, total = groups_for([1, 1], [0, 7], [torch.tensor(123)])
    x = torch.randn(total, V)
    want = x.clone()
    for g in gs:
        want[g["row"], 123] = -1e9
    r.run_site(r.trace(), 0, x, gs)
    check("ban", x, want)
    # h[V] is out of range: an error for that request, no write.
    y = torch.randn(total, V)
    before = y.clone()
    r.run_site(r.trace(), 0, y, [dict(gs[0], params=[torch.tensor(V)], request=7)])
    check("ban out of range leaves logits", y, before)
    if not any(req == 7 and "index out of range" in msg for req, msg in r.errors):
        failures.append(f"ban: no error for an out-of-range index: {r.errors}")


def conditional(d):
    r = BundleRunner(f"{d}/09-conditional-steering.nnsb")
    probe_v, steer = torch.randn(D), torch.randn(D)
    gs, total = groups_for([3, 1, 2, 4], [0, 1, 2, 3], [probe_v, steer])
    x = torch.randn(total, D)
    want = x.clone()
    for g in gs:
        rows = want[g["row"]:g["row"] + g["rows"]]
        if rows[-1] @ probe_v > 0.5:
            rows += steer
    r.run_site(r.trace(), 0, x, gs)
    check("conditional", x, want, atol=1e-4)


def cache(d):
    r = BundleRunner(f"{d}/10-cache-layers.nnsb")
    gs, total = groups_for([3, 2], [0, 0], [])
    x = torch.randn(total, D)
    r.run_site(r.trace(), 5, x, gs)
    saves = by_request(r)
    for g in gs:
        index, _, value = saves[g["request"]][0]
        if index != 5:
            failures.append("cache: wrong save index")
        check("cache", value, x[g["row"]:g["row"] + g["rows"]])


def patching(d):
    r = BundleRunner(f"{d}/11-patching.nnsb")
    frame = C.create_string_buffer(4096)
    params = [torch.tensor(10), torch.tensor(20)]
    spans, total = layout([7, 6])
    gs = [dict(row=spans[i][0], rows=spans[i][1], step=0, invoke=i, params=params, frame=frame,
               request=1) for i in range(2)]
    x = torch.randn(total, D)
    want = x.clone()
    want[gs[1]["row"] + 5] = x[gs[0]["row"] + 5]
    r.run_site(r.trace(), 0, x, gs)
    check("patching", x, want)
    logits = torch.randn(3, V)
    r.run_site(r.trace(), 1, logits, [dict(row=2, rows=1, step=0, invoke=1, params=params,
                                            frame=frame, request=1)])
    check("patching diff", by_request(r)[1][0][2], logits[2, 10] - logits[2, 20])
    # A clean prompt shorter than 6 tokens: index 5 is out of range for T = 3.
    short = [dict(gs[0], rows=3, request=4)]
    r.run_site(r.trace(), 0, torch.randn(total, D), short)
    if not any(req == 4 and "index out of range" in msg for req, msg in r.errors):
        failures.append(f"patching: no error for h[5] with T=3: {r.errors}")


for test in [capture, steering, ablate, logit_lens, probe, top_logits, skip, ban, conditional,
             cache, patching]:
    try:
        test(sys.argv[1])
    except Exception as e:  # a crash in one program is reported with the others
        failures.append(f"{test.__name__}: {type(e).__name__}: {e}")
for f in failures:
    print("FAIL", f)
print(f"{11 - len({f.split(':')[0] for f in failures})} of 11 canonical programs agree")
sys.exit(1 if failures else 0)

"""Value checks of the run-time `if` repros found by random-differential.test: each repro's
bundle runs through the C ABI (bundle_ctypes) on staggered requests over several steps (a
prompt of 1-5 tokens, then one token per step, so one kernel call mixes token counts, steps and
per-request params, and each request keeps its frame), compared with the program written out
here in torch. The condition is per request, so one kernel call holds groups on both sides of
it; the check fails unless both outcomes occurred. The .nns files declare `v: f32[hidden]`
then `a: f32`. A repro keeps per-request values across steps in `r.state`; where torch raises
for a request, the kernels must report an error for it (containing `Repro.error`), and the
request is dropped from later steps, as the runtime does.
Usage: if_programs.py BUNDLE NAME
"""
import ctypes as C
import random
import sys

import torch

from bundle_ctypes import BundleRunner

D = 64  # hidden size of test/Inputs/tiny-qwen3
STEPS = 4  # each request runs steps 0..STEPS
L3 = "model.layers.3.output"
L4 = "model.layers.4.output"


class Repro:
    """A hand-translated program: the sites it touches and one step of it in torch; `taken`
    records the outcomes of its run-time condition."""

    def __init__(self, paths, step_fn, error=None):
        self.paths, self.step_fn, self.taken, self.error = paths, step_fn, set(), error
        self.state = {}

    def run_step(self, sites, params, step):
        saves, cache = {}, []
        self.step_fn(self, sites, params, step, saves, cache)
        for path in cache:
            saves[path] = sites[path].clone()
        return saves

    def cond(self, value):
        self.taken.add(bool(value))
        return bool(value)


def close(got, want):
    return got.shape == want.shape and torch.allclose(got.float(), want.float(), atol=1e-4,
                                                      rtol=1e-4)


def check(runner, repro, rng):
    """Runs every site kernel on staggered requests; returns a list of mismatches."""
    trace = runner.trace(0)
    entries = [trace.sites[i] for i in range(trace.num_sites)]
    names = [trace.saves[i].name.decode() for i in range(trace.num_saves)]
    requests = [dict(id=r + 1, start=rng.randrange(0, 3), prompt=rng.randint(1, 5),
                     params=dict(v=torch.randn(D), a=torch.randn(())),
                     frame=C.create_string_buffer(max(trace.frame_bytes, 8)), state={})
                for r in range(4)]
    problems, failing, failed = [], set(), set()
    for tick in range(max(q["start"] for q in requests) + STEPS + 1):
        active = [q for q in requests
                  if 0 <= tick - q["start"] <= STEPS and q["id"] not in failed]
        if not active:
            continue
        inputs, finals, want = {}, {}, {}
        for q in active:
            step = tick - q["start"]
            tokens = q["prompt"] if step == 0 else 1
            sites = {p: torch.randn(tokens, D) for p in repro.paths}
            inputs[q["id"]] = {p: t.clone() for p, t in sites.items()}
            repro.state = q["state"]
            try:
                for name, value in repro.run_step(sites, q["params"], step).items():
                    want[(q["id"], name, step)] = value
            except RuntimeError:
                if repro.error is None:
                    raise
                failing.add(q["id"])
            finals[q["id"]] = sites
        runner.saves.clear()
        for index, entry in enumerate(entries):
            path = entry.site_path.decode()
            row, groups, chunks = 1, [], []
            for q in active:
                t = inputs[q["id"]][path]
                groups.append(dict(row=row, rows=t.shape[0], step=tick - q["start"],
                                   params=[q["params"]["v"], q["params"]["a"]],
                                   frame=q["frame"], request=q["id"]))
                chunks.append(t)
                row += t.shape[0]
            # One padding row on each side: a kernel must not touch rows of other sequences.
            flat = torch.cat([torch.randn(1, D)] + chunks + [torch.randn(1, D)])
            pad = flat[[0, -1]].clone()
            runner.run_site(trace, index, flat, groups)
            for g, q in zip(groups, active):
                if q["id"] in failing:
                    continue
                got = flat[g["row"]:g["row"] + g["rows"]]
                if not close(got, finals[q["id"]][path]):
                    problems.append(f"{path} step {g['step']} request {q['id']}: got "
                                    f"{got.flatten()[:3].tolist()}, want "
                                    f"{finals[q['id']][path].flatten()[:3].tolist()}")
            if not torch.equal(flat[[0, -1]], pad):
                problems.append(f"{path}: padding rows written")
        got = {(r, names[i], step): value for r, i, step, value in runner.saves
               if r not in failing}
        for key in sorted(set(want) | set(got)):
            if key not in got or key not in want:
                problems.append(f"save {key}: {'missing' if key not in got else 'extra'}")
            elif not close(got[key], want[key]):
                problems.append(f"save {key}: got {got[key].flatten()[:3].tolist()}, want "
                                f"{want[key].flatten()[:3].tolist()}")
        failed |= failing
    reported = {r for r, m in runner.errors if r in failed and repro.error in m}
    problems += [f"request {r}: error {m}" for r, m in runner.errors if r not in reported]
    problems += [f"request {r}: torch fails, the kernels reported no error '{repro.error}'"
                 for r in sorted(failed - reported)]
    if repro.error and not failed:
        problems.append("torch never failed: the error case went untested")
    return problems


def indexed_write(r, sites, p, step, saves, cache):
    # if (a > 0.5) { layers[3].output[0] = v }
    if step == 0 and r.cond(p["a"] > 0.5):
        sites[L3][0] = p["v"]


def site_view(r, sites, p, step, saves, cache):
    # if (a > 0.5) { s = layers[3].output[0].save() }
    if step == 0 and r.cond(p["a"] > 0.5):
        saves["s"] = sites[L3][0].clone()


def site_read_write(r, sites, p, step, saves, cache):
    # if (a > 0.5) { layers[3].output = layers[3].output * 2 }
    if step == 0 and r.cond(p["a"] > 0.5):
        sites[L3][...] = sites[L3] * 2


def after_if(r, sites, p, step, saves, cache):
    # if (a > 0.5) { layers[3].output += v }; layers[3].output += v
    if step == 0:
        if r.cond(p["a"] > 0.5):
            sites[L3] += p["v"]
        sites[L3] += p["v"]


def params_only(r, sites, p, step, saves, cache):
    # if (a > 0.5) { s = v.save() }; layers[4].output += v
    if step == 0:
        if r.cond(p["a"] > 0.5):
            saves["s"] = p["v"].clone()
        sites[L4] += p["v"]


def cache_after_if(r, sites, p, step, saves, cache):
    # if (a > 0.5) { s = layers[3].output.save() }; cache(layers[3].output)
    if step == 0:
        if r.cond(p["a"] > 0.5):
            saves["s"] = sites[L3].clone()
        cache.append(L3)


def late_cond(r, sites, p, step, saves, cache):
    # cache(layers[3].output); if layers[4].output[0].sum() > 0 { s = v.save() }
    if step == 0:
        cache.append(L3)
        if r.cond(sites[L4][0].sum() > 0):
            saves["s"] = p["v"].clone()


def site_cond(r, sites, p, step, saves, cache):
    # for step in steps { if (layers[3].output[-1] @ v) > 0 { x = layers[3].output[-1]
    #   layers[3].output[0] = x * a; s = x.sum().save() } else { layers[4].output -= v } }
    h = sites[L3]
    if r.cond(h[-1] @ p["v"] > 0):
        x = h[-1].clone()
        h[0] = x * p["a"]
        saves["s"] = x.sum()
    else:
        sites[L4] -= p["v"]


def if_rebind(r, sites, p, step, saves, cache):
    # x = layers[3].output[-1]; if a > 0.5 { x = x * a }; y = x
    # for i in 0..3 { if i != 1 { y = y + v } }
    # for step in steps { h = layers[3].output
    #   if (h[-1] @ v) > 0 { h = h * 2 } else { h = h - v }
    #   layers[4].output += h; s = h.sum(-1).save() }
    # layers[4].output += y
    if step == 0:
        x = sites[L3][-1].clone()
        if r.cond(p["a"] > 0.5):
            x = x * p["a"]
    h = sites[L3].clone()
    if r.cond(h[-1] @ p["v"] > 0):
        h = h * 2
    else:
        h = h - p["v"]
    sites[L4] += h
    saves["s"] = h.sum(-1)
    if step == 0:
        sites[L4] += x + 2 * p["v"]


def step_broadcast(r, sites, p, step, saves, cache):
    # x = layers[3].output
    # for step in steps { y = layers[4].output * a + x; s = y.sum(-1).save()
    #   layers[4].output[-1] = y[-1] }
    if step == 0:
        r.state["x"] = sites[L3].clone()
    y = sites[L4] * p["a"] + r.state["x"]
    saves["s"] = y.sum(-1)
    sites[L4][-1] = y[-1]


def step_broadcast_error(r, sites, p, step, saves, cache):
    # x = layers[3].output; for step in steps { layers[4].output += x }
    if step == 0:
        r.state["x"] = sites[L3].clone()
    r.cond(sites[L4].shape[0] == r.state["x"].shape[0])
    sites[L4] += r.state["x"]


REPROS = {
    "if-rebind": Repro([L3, L4], if_rebind),
    "step-broadcast": Repro([L3, L4], step_broadcast),
    "step-broadcast-error": Repro([L3, L4], step_broadcast_error,
                                  error="does not broadcast to its destination (value [?, 64], "
                                  "'model.layers.4.output' [?, 64] at this step"),
    "if-indexed-write": Repro([L3], indexed_write),
    "if-site-view": Repro([L3], site_view),
    "if-site-read-write": Repro([L3], site_read_write),
    "after-if": Repro([L3], after_if),
    "if-params-only": Repro([L4], params_only),
    "cache-after-if": Repro([L3], cache_after_if),
    "if-late-cond": Repro([L3, L4], late_cond),
    "if-site-cond": Repro([L3, L4], site_cond),
}

if __name__ == "__main__":
    torch.manual_seed(0)
    name = sys.argv[2]
    repro = REPROS[name]
    problems = check(BundleRunner(sys.argv[1]), repro, random.Random(0))
    if repro.taken and repro.taken != {True, False}:
        problems.append(f"the condition was always {repro.taken}: one branch went untested")
    for p in problems:
        print("FAIL", p)
    print(f"{name}: {'agrees with torch' if not problems else 'differs from torch'}")

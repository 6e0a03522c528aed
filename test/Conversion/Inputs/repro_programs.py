"""Value checks of the reduced random-differential repros and small programs like them: each
bundle runs through the C ABI (bundle_ctypes) on staggered requests over several steps
(prompts of 1-5 tokens, then one-token steps, so one kernel call mixes token counts and steps;
each request keeps its frame), and every site write and save is compared with the program
written out here in torch. The .nns files declare the params w, v, a, tok, u, m in this order.
Usage: repro_programs.py BUNDLE NAME
"""
import ctypes as C
import random
import sys

import torch

from bundle_ctypes import BundleRunner

D, I, V = 64, 128, 256  # the tiny Qwen3 config: hidden, intermediate, vocab
STEPS = 4  # each request runs steps 0..STEPS
PARAMS = ["w", "v", "a", "tok", "u", "m"]


class Repro:
    """A hand-translated program: its sites ({path: width}) and one step of it in torch."""

    def __init__(self, sites, step_fn):
        self.sites, self.step_fn = sites, step_fn

    def run_step(self, env, sites, params, step):
        """Runs one step on `sites` in place; returns saves and cached paths."""
        saves, cache = {}, []
        self.step_fn(env, sites, params, step, saves, cache)
        return saves, cache


def in_steps(step, start, stop=None, stride=1):
    return step >= start and (stop is None or step < stop) and (step - start) % stride == 0


def dead_loop(env, sites, p, step, saves, cache):
    # x1 = layers[6].output[-1]; for step in steps { x3 = x1 + 1.0 }; s6 = x1.save()
    if step == 0:
        env["x1"] = sites["model.layers.6.output"][-1].clone()
        saves["s6"] = env["x1"]


def loop_between(env, sites, p, step, saves, cache):
    # x1 = layers[5].input; for step in steps[0:3] { s3 = step.save() }
    # layers[12].mlp.output = min(x1, x1).softmax(0)
    if step == 0:
        env["x1"] = sites["model.layers.5.input"].clone()
    if in_steps(step, 0, 3):
        saves["s3"] = torch.tensor(step)
    if step == 0:
        sites["model.layers.12.mlp.output"][:] = torch.minimum(env["x1"], env["x1"]).softmax(0)


def loop_save_between(env, sites, p, step, saves, cache):
    # x2 = layers[2].self_attn.output.max(-1); for step in steps[0::2] { s5 = v.max().save() }
    # s6 = x2.save()
    if step == 0:
        x2 = sites["model.layers.2.self_attn.output"].max(-1).values
    if in_steps(step, 0, None, 2):
        saves["s5"] = p["v"].max()
    if step == 0:
        saves["s6"] = x2


def loop_outer_name(env, sites, p, step, saves, cache):
    # x1 = mean(layers[2].output.clamp(min=-0.56, max=0.4), 0), then two loops using it
    if step == 0:
        env["x1"] = sites["model.layers.2.output"].clamp(-0.56, 0.4).mean(0)
    x1 = env["x1"]
    if in_steps(step, 2, None, 2):
        mlp = sites["model.layers.8.mlp.output"]
        x2 = mlp[-1] @ p["v"]
        saves["s3"] = torch.where((x1 - p["v"]) > torch.maximum(torch.tensor(float(step)), x2),
                                  mlp[0:2].mean(0), p["a"] * step)
    if in_steps(step, 1):
        attn = sites["model.layers.14.self_attn.output"]
        attn[-1] += (attn[0] + attn[-1]) / (x1.abs() + 1)


def cache_order(env, sites, p, step, saves, cache):
    # for step in steps[0:2] { cache(layers[3].output) }; layers[3].output += v
    # for step in steps[1:] { layers[3].output[-1] *= a }
    site = sites["model.layers.3.output"]
    if step == 0:
        site += p["v"]
    if in_steps(step, 1):
        site[-1] *= p["a"]
    if in_steps(step, 0, 2):
        cache.append("model.layers.3.output")


def clamp_one_bound(env, sites, p, step, saves, cache):
    # for step in steps { layers[3].output = layers[3].output.clamp(min=-0.5) }
    # x = clamp(layers[3].output * a, max=v).save()
    site = sites["model.layers.3.output"]
    site[:] = site.clamp(min=-0.5)
    if step == 0:
        saves["x"] = torch.minimum(site * p["a"], p["v"])


REPROS = {
    "dead-loop": Repro({"model.layers.6.output": D}, dead_loop),
    "loop-between": Repro({"model.layers.5.input": D, "model.layers.12.mlp.output": D},
                          loop_between),
    "loop-save-between": Repro({"model.layers.2.self_attn.output": D}, loop_save_between),
    "loop-outer-name": Repro({"model.layers.2.output": D, "model.layers.8.mlp.output": D,
                              "model.layers.14.self_attn.output": D}, loop_outer_name),
    "cache-order": Repro({"model.layers.3.output": D}, cache_order),
    "clamp-one-bound": Repro({"model.layers.3.output": D}, clamp_one_bound),
}


def close(got, want):
    if got.shape != want.shape:
        return False
    if want.dtype == torch.int64:
        return torch.equal(got, want)
    return torch.allclose(got.float(), want.float(), atol=1e-4, rtol=1e-4)


def check(runner, prog, rng):
    """Runs staggered requests through every site kernel of trace 0; returns mismatches."""
    trace = runner.trace(0)
    entries = [trace.sites[i] for i in range(trace.num_sites)]
    save_names = [trace.saves[i].name.decode() for i in range(trace.num_saves)]
    requests = []
    for r in range(4):
        params = dict(w=torch.randn(D, D) / 8, v=torch.randn(D), a=torch.randn(()),
                      tok=torch.tensor(rng.randrange(V)), u=torch.randn(V), m=torch.randn(I))
        requests.append(dict(id=r + 1, start=rng.randrange(0, 3), prompt=rng.randint(1, 5),
                             params=params, env={},
                             frame=C.create_string_buffer(max(trace.frame_bytes, 8))))
    problems = []
    for tick in range(max(q["start"] for q in requests) + STEPS + 1):
        active = [q for q in requests if 0 <= tick - q["start"] <= STEPS]
        inputs, finals, want_saves, got_saves = {}, {}, {}, {}
        for q in active:
            step = tick - q["start"]
            tokens = q["prompt"] if step == 0 else 1
            sites = {p: torch.randn(tokens, w) for p, w in prog.sites.items()}
            inputs[q["id"]] = {p: t.clone() for p, t in sites.items()}
            saves, cache = prog.run_step(q["env"], sites, q["params"], step)
            saves.update({p: sites[p].clone() for p in cache})
            finals[q["id"]] = sites
            want_saves.update({(q["id"], n, step): v for n, v in saves.items()})
        for index, entry in enumerate(entries):
            path = entry.site_path.decode()
            row, groups, chunks = 1, [], []
            for q in active:
                t = inputs[q["id"]][path]
                groups.append(dict(row=row, rows=t.shape[0], step=tick - q["start"],
                                   params=[q["params"][n] for n in PARAMS], frame=q["frame"],
                                   request=q["id"]))
                chunks.append(t)
                row += t.shape[0]
            width = prog.sites[path]
            flat = torch.cat([torch.randn(1, width)] + chunks + [torch.randn(1, width)])
            runner.saves.clear()
            runner.run_site(trace, index, flat, groups)
            for request, save, step, value in runner.saves:
                got_saves[(request, save_names[save], step)] = value
            for g, q in zip(groups, active):
                got = flat[g["row"]:g["row"] + g["rows"]]
                if not close(got, finals[q["id"]][path]):
                    problems.append(f"{path} step {g['step']} request {q['id']} differs")
        for key in sorted(set(want_saves) | set(got_saves)):
            if key not in got_saves or key not in want_saves:
                problems.append(f"save {key}: {'missing' if key not in got_saves else 'extra'}")
            elif not close(got_saves[key], want_saves[key]):
                problems.append(f"save {key}: got {got_saves[key].flatten()[:3].tolist()} "
                                f"want {want_saves[key].flatten()[:3].tolist()}")
    problems += [f"request {r}: error {m}" for r, m in runner.errors]
    return problems


if __name__ == "__main__":
    torch.manual_seed(0)
    name = sys.argv[2]
    problems = check(BundleRunner(sys.argv[1]), REPROS[name], random.Random(0))
    for p in problems:
        print("FAIL", p)
    print(f"{name}: {'agrees with torch' if not problems else 'differs from torch'}")

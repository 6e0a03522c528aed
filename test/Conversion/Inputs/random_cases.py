"""Reference cases for the random programs of random_programs.py.

`random_cases.py CONFIG_DIR OUT_DIR SEED N` writes the N programs of SEED (random_programs.py) as .nns files (40
named traces each), a random tiny model of CONFIG_DIR's config (transformers, save_pretrained)
to OUT_DIR/tiny-qwen3 and, per .nns file, a case file (random-NNN.json) for
NNSCDifferentialTests: staggered requests (a prompt of 1-5 tokens at step 0, then one token
per step up to STEPS, so one kernel call mixes token counts and steps; 2-3 prompts per request
for traces with invokes) on random site tensors, with everything the program leaves in the
sites and saves, evaluated in torch from the random structure (never by parsing the text).
Module calls evaluate with the transformers model's modules; a request ends after a step where
it called stop() or finish().
"""
import os
import random
import sys

import torch

import random_programs as rp
import random_values as rv
from random_endings import site_key
from diff_case import CaseFile, layout, tiny_model


class Modules:
    """MODULES for the reference: module paths resolved on the transformers model."""

    def __init__(self, model):
        self.model = model

    def __getitem__(self, path):
        return self.model.get_submodule(path)


def request_params(rng):
    return dict(w=torch.randn(rv.D, rv.D) / 8, v=torch.randn(rv.D), a=torch.randn(()),
                tok=torch.tensor(rng.randrange(-rv.V, rv.V)), u=torch.randn(rv.V),
                m=torch.randn(rv.I))


def site_value(site, tokens):
    return torch.randn(rv.V) if site.layer is None else torch.randn(tokens, site.width)


def write_program(case, bundle, prog, rng):
    p = case.program(prog.name, bundle, prog.name)
    requests = []
    for rid in range(1, 5):
        params = request_params(rng)
        p.request(rid, params)
        requests.append(dict(id=rid, start=rng.randrange(0, 3), params=params, env={},
                             prompts=[rng.randint(1, 5) for _ in range(prog.invokes)],
                             ended=False))
    paths = sorted({s.path: s for s in prog.sites}.items(), key=lambda kv: site_key(kv[1]))
    for tick in range(max(q["start"] for q in requests) + rv.STEPS + 1):
        active = [q for q in requests
                  if not q["ended"] and 0 <= tick - q["start"] <= rv.STEPS]
        if not active:
            continue
        p.tick()
        inputs, finals = {}, {}
        for q in active:
            step = tick - q["start"]
            sites = []
            for k in range(prog.invokes):
                tokens = q["prompts"][k] if step == 0 else 1
                # Every invoke's rows go to every site of the trace, as the engine's
                # BundleHook passes them; an invoke's kernel work runs only at its own sites.
                sites.append({s.path: site_value(s, tokens) for s in prog.sites})
            before = [{path: t.clone() for path, t in inv.items()} for inv in sites]
            s = prog.run_step(q["env"], sites, q["params"], step)
            # The output site of a skipped module fires with the value .skip() wrote.
            for path, value in s.skipped.items():
                if path in before[0]:
                    before[0][path] = value.clone()
            for path, name in s.cache:
                s.saves[name] = sites[0][path].clone()
            for name, value in s.saves.items():
                p.save(q["id"], name, value)
            if "stop" in s.flags:
                p.stop(q["id"], step)
            if "finish" in s.flags:
                p.finish(q["id"], step)
            q["ended"] = bool(s.flags)
            inputs[q["id"]], finals[q["id"]] = before, sites
        for path, site in paths:
            chunks, wants, groups = [], [], []
            for q in active:
                for k in range(prog.invokes):
                    if path not in inputs[q["id"]][k]:
                        continue
                    value, final = inputs[q["id"]][k][path], finals[q["id"]][k][path]
                    if site.layer is None:
                        value, final = value.unsqueeze(0), final.unsqueeze(0)
                    chunks.append(value)
                    wants.append(final)
                    groups.append(dict(request=q["id"], rows=value.shape[0],
                                       step=tick - q["start"], invoke=k))
            if not chunks:
                continue
            flat, spans = layout(chunks)
            want = flat.clone()
            for (row, n), g, final in zip(spans, groups, wants):
                g["row"] = row
                want[row:row + n] = final
            p.call(path, flat, want, groups)


def main():
    config_dir, out, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    progs = rp.generate(out, seed, count)
    rv.MODULES = Modules(tiny_model(config_dir, os.path.join(out, "tiny-qwen3")))
    torch.manual_seed(seed)
    rng = random.Random(seed)
    for f in range(0, count, rv.PER_FILE):
        stem = f"random-{f // rv.PER_FILE:03d}"
        case = CaseFile("tiny-qwen3")
        for prog in progs[f:f + rv.PER_FILE]:
            write_program(case, stem + ".nnsb", prog, rng)
        case.write(os.path.join(out, stem + ".json"))
    print(f"{count} random programs")


if __name__ == "__main__":
    main()

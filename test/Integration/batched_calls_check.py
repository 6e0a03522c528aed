"""Module calls batched over a kernel call's groups give each request what it gets alone.

Usage: batched_calls_check.py NNS_RUN GGUF WORKDIR

A site kernel makes each top-level module call once for all the groups that reach it (their
rows stacked: docs/Compiler.md, "Module calls"). The program below runs on prompts of different
lengths, all in one nns-run (two sequences at a time, so later requests prefill while earlier
ones decode and one kernel call holds groups at different steps), and each prompt alone; every
save must be the same. It has the logit lens at the last token of every layer, lm_head(norm(.))
on whole [T, hidden] prompts (different row counts per group), a call inside a run-time `if`
taken by some requests only, calls in a steps slice that only some groups of a kernel call are
in, and a value kept across a call (x after layers[4].mlp(x)).

The product's kernel may differ between one row and many (the GEMV for a single row, the
blocked GEMM above that), so lm_head's outputs are compared within the parity tolerance
(rtol=1e-3, atol=1e-3); integers (argmax) must be equal, and the report counts the saves that
are bitwise equal.
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file

NNS_RUN, GGUF, WORK = sys.argv[1:4]
PROGRAM = """\
param t: f32 = 0.0
trace {
    whole = lm_head(norm(layers[5].output)).log_softmax().save()
    h = layers[10].output[-1]
    if h.sum() > t { n = norm(h).save() }
    x = layers[12].output[-1]
    kept = (layers[12].mlp(x) + x).sum().save()
    for step in steps[1:3] { late = lm_head(norm(layers[20].output[-1])).log_softmax().save() }
    for i in 21..30 { top = lm_head(norm(layers[i].output[-1])).argmax().save() }
}
"""
PROMPTS = [[1, 504, 3458, 314, 4649, 314], [1, 9690, 28, 2683, 1151],
           [1, 2030, 1453, 282, 253, 1352, 29, 378], [1, 1030, 4, 5, 66, 743, 211, 45, 9, 8, 1],
           [1, 42], [1, 8, 12931, 18, 3, 551, 40]]
MAX_TOKENS = [2, 4, 3, 4, 1, 4]


def run(name, indices, extra):
    out = os.path.join(WORK, name)
    prompts = os.path.join(WORK, name + ".jsonl")
    with open(prompts, "w") as f:
        for i in indices:
            f.write(json.dumps({"ids": PROMPTS[i], "max_tokens": MAX_TOKENS[i]}) + "\n")
    subprocess.run([NNS_RUN, "--model", GGUF, "--prompts", prompts, "--trace", source,
                    "--ignore-eos", "--save-dir", out, "--quiet"] + extra, check=True,
                   stdout=subprocess.DEVNULL)
    return [load_file(os.path.join(out, f"{k}.safetensors")) for k in range(len(indices))]


source = os.path.join(WORK, "lens.nns")
with open(source, "w") as f:
    f.write(PROGRAM)
together = run("together", range(len(PROMPTS)), ["--max-num-seqs", "2"])
problems, bitwise, total, taken = [], 0, 0, set()
for i in range(len(PROMPTS)):
    alone = run(f"alone{i}", [i], [])[0]
    got = together[i]
    taken.add("n" in alone)
    if set(got) != set(alone):
        problems.append(f"prompt {i}: saves {sorted(got)} together, {sorted(alone)} alone")
        continue
    for name in sorted(alone):
        a, b = got[name], alone[name]
        total += 1
        if a.shape != b.shape or a.dtype != b.dtype:
            problems.append(f"prompt {i} {name}: {a.dtype}{list(a.shape)} together, "
                            f"{b.dtype}{list(b.shape)} alone")
        elif torch.equal(a, b):
            bitwise += 1
        elif a.is_floating_point() and torch.allclose(a, b, rtol=1e-3, atol=1e-3):
            pass
        else:
            diff = (a.double() - b.double()).abs().max().item()
            problems.append(f"prompt {i} {name}: differs by {diff:.3g}")
if taken != {True, False}:
    problems.append(f"the `if` was {'always' if True in taken else 'never'} taken")
if not any(f"late.{s}" in together[i] for i in range(len(PROMPTS)) for s in (1, 2)):
    problems.append("no request reached the steps slice")
for p in problems:
    print("FAIL", p)
print(f"batched calls: {len(PROMPTS)} prompts together equal each alone, {total} saves "
      f"({bitwise} bitwise, the rest within rtol=1e-3, atol=1e-3)" if not problems else
      "batched calls: differ")

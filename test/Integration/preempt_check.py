"""Bundled requests preempted by a tiny KV cache restart from their prompt, so their tokens
and saves equal a run whose cache never runs short.

Usage: preempt_check.py NNS_RUN MODEL_DIR SINGLE.nnsb GANG.nnsb WORKDIR

SINGLE keeps a prompt value in its frame and steers every step with it, saving the argmax of
every step and a prompt row; GANG is a two-invoke trace (clean -> corrupt) doing the same across
invokes. Each runs twice on the same prompts (greedy, --ignore-eos): with the default cache,
and with 4-token blocks and a cache of a few sequences, which preempts running requests
(nns-run reports the count, which must be > 0 in the small run and 0 in the large one).
Plain requests mixed into the SINGLE batches resume by recompute as before; they must equal
too.
"""
import json
import os
import re
import subprocess
import sys

import torch
from safetensors.torch import load_file

NNS_RUN, MODEL, SINGLE, GANG, WORK = sys.argv[1:6]
STEPS = 14
PROMPTS = [[1, 5, 9, 14, 3, 8], [3, 7, 11, 19, 23, 29, 31, 37], [2, 4, 8, 16, 32],
           [6, 10, 12, 16, 18, 20, 22], [9, 8, 7, 6, 5, 4, 3], [11, 13, 17, 19, 23],
           [40, 41, 42, 43, 44, 45], [50, 60, 70, 80, 90, 100, 110]]
PLAIN = {2, 5}
SMALL = ["--block-size", "4", "--num-blocks", "16", "--max-model-len", "64"]


def run(bundle, name, gang, extra):
    lines = [json.dumps({"ids": ids, "bundle": gang or i not in PLAIN})
             for i, ids in enumerate(PROMPTS)]
    prompts = os.path.join(WORK, name + ".jsonl")
    with open(prompts, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(WORK, name)
    cmd = [NNS_RUN, "--model", MODEL, "--prompts", prompts, "--max-tokens", str(STEPS),
           "--ignore-eos", "--bundle", bundle, "--save-dir", out] + extra
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    preemptions = int(re.search(r"preemptions (\d+)", proc.stderr).group(1))
    count = len(PROMPTS) // 2 if gang else len(PROMPTS)
    results = [(load_file(os.path.join(out, f"{i}.safetensors")),
                json.load(open(os.path.join(out, f"{i}.json")))) for i in range(count)]
    return preemptions, results


def same(big, small, what):
    for i, ((saves_b, meta_b), (saves_s, meta_s)) in enumerate(zip(big, small)):
        tokens_b = [v["ids"] for v in meta_b["invokes"]] if "invokes" in meta_b else meta_b["ids"]
        tokens_s = [v["ids"] for v in meta_s["invokes"]] if "invokes" in meta_s else meta_s["ids"]
        assert tokens_b == tokens_s, (what, i, tokens_b, tokens_s)
        assert meta_s["finish_reason"] == "length", (what, i, meta_s)
        assert sorted(saves_b) == sorted(saves_s), (what, i, sorted(saves_b), sorted(saves_s))
        for name, value in saves_b.items():
            assert value.shape == saves_s[name].shape, (what, i, name)
            assert torch.allclose(value.float(), saves_s[name].float(), rtol=1e-4, atol=1e-5), \
                (what, i, name, value, saves_s[name])


def main():
    for label, bundle, gang in (("single", SINGLE, False), ("gang", GANG, True)):
        n_big, big = run(bundle, label + "-big", gang, [])
        n_small, small = run(bundle, label + "-small", gang, SMALL)
        assert n_big == 0 and n_small > 0, (label, n_big, n_small)
        same(big, small, label)
        if not gang:
            assert all(sorted(s) == ["h"] + sorted(f"top.{k}" for k in range(STEPS))
                       for i, (s, _) in enumerate(big) if i not in PLAIN), big[0][0].keys()
        print(f"{label}: {len(big)} requests, tokens and saves equal with and without "
              f"preemption")


main()

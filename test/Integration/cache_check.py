"""The prefix-cache policy of bundled requests, from their traces' manifest flags.

Usage: cache_check.py NNS_RUN MODEL_DIR READS.nnsb WRITES.nnsb DECODE.nnsb WORKDIR

Four prompts share a 32-token prefix (two 16-token blocks) and run one at a time
(--max-num-seqs 1), so each can hit the blocks of the ones before it; prompts 0 and 1 run
plain, 2 and 3 bundled. Expected prefix-cache hit tokens:
- READS (reads every prompt position): the bundled requests compute their whole prompts:
  only plain 1 hits plain 0 -> 32.
- WRITES (writes prompt positions, same params): the bundled requests share blocks with each
  other under their salt, never with plain ones -> 0 + 32 + 32 = 64.
- DECODE (writes generated positions only): prompts share the plain cache -> 3 * 32 = 96.
Every run's tokens and saves equal the same run with --no-prefix-caching.
"""
import json
import os
import re
import subprocess
import sys

from safetensors.torch import load_file

NNS_RUN, MODEL, READS, WRITES, DECODE, WORK = sys.argv[1:7]
PREFIX = [(7 * i + 3) % 120 + 1 for i in range(32)]
PROMPTS = [PREFIX + [5, 6, 7], PREFIX + [9, 10], PREFIX + [11, 12, 13], PREFIX + [14]]
PLAIN = {0, 1}


def run(bundle, name, caching, extra=()):
    lines = [json.dumps({"ids": ids, "bundle": i not in PLAIN}) for i, ids in enumerate(PROMPTS)]
    prompts = os.path.join(WORK, name + ".jsonl")
    with open(prompts, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(WORK, name + ("" if caching else "-nocache"))
    cmd = [NNS_RUN, "--model", MODEL, "--prompts", prompts, "--bundle", bundle, "--max-tokens",
           "4", "--ignore-eos", "--max-num-seqs", "1", "--save-dir", out] + list(extra)
    if not caching:
        cmd.append("--no-prefix-caching")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    hits = int(re.search(r"prefix cache hit tokens (\d+)", proc.stderr).group(1))
    results = []
    for i in range(len(PROMPTS)):
        saves = load_file(os.path.join(out, f"{i}.safetensors"))
        results.append(({k: v.tolist() for k, v in saves.items()},
                        json.load(open(os.path.join(out, f"{i}.json")))["ids"]))
    return hits, results


def check(bundle, name, expected_hits):
    hits, cached = run(bundle, name, True)
    nohits, uncached = run(bundle, name, False)
    assert hits == expected_hits, (name, hits, expected_hits)
    assert nohits == 0, (name, nohits)
    assert cached == uncached, (name, cached, uncached)
    print(f"{name}: {hits} prefix-cache hit tokens, outputs equal to --no-prefix-caching")


def main():
    check(READS, "reads", 32)
    check(WRITES, "writes", 64)
    check(DECODE, "decode", 96)


if __name__ == "__main__":
    main()

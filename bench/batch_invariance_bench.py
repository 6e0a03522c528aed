"""The cost of batch-invariant mode (docs/Engine.md, "Batch-invariant mode"): model_bench's
64-request workload (random token ids, prompt and output lengths U(32, --max-len), greedy, EOS
ignored) and batch-1 decode, each run with and without --batch-invariant in the same run, fp32
and bf16. Every request's tokens are compared between the two runs too (they may differ: the
default mode's sums are ordered differently).

usage: .venv/bin/python bench/batch_invariance_bench.py [--build DIR] [--model GGUF]
           [--max-len N] [--decode-tokens N] [--dtypes fp32,bf16] [--threads N]

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import os
import random

from nnsrun import ROOT, log, nns_run, print_load_average


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--decode-tokens", type=int, default=128)
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    rng = random.Random(0)
    work = [{"ids": [rng.randrange(1, 49152) for _ in range(rng.randint(32, a.max_len))],
             "max_tokens": rng.randint(32, a.max_len)} for _ in range(64)]
    single = [{"ids": [rng.randrange(1, 49152) for _ in range(32)],
               "max_tokens": a.decode_tokens}]
    rows = []
    for dtype in a.dtypes.split(","):
        flags = ["--max-tokens", str(a.max_len), "--dtype", dtype, "--threads", str(a.threads)]
        for name, prompts in (("64 requests", work), ("batch-1 decode", single)):
            log("%s %s: default, then --batch-invariant" % (name, dtype))
            default = nns_run(a.build, a.model, prompts, flags)
            invariant = nns_run(a.build, a.model, prompts, flags + ["--batch-invariant"])
            rate = lambda r: r["generated"] / r["seconds"]
            same = sum(x == y for x, y in zip(default["ids"], invariant["ids"]))
            rows.append(("%s %s" % (name, dtype), "%.1f tok/s" % rate(default),
                         "%.1f tok/s" % rate(invariant),
                         "%.2fx" % (rate(invariant) / rate(default)),
                         "%d/%d" % (same, len(prompts))))
    print("| workload | default | --batch-invariant | ratio | same tokens |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| %s |" % " | ".join(row))
    print_load_average()


if __name__ == "__main__":
    main()

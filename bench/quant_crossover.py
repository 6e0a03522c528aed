"""Where the quantized decode path stops paying: batched decode on the file's blocks against the
same steps on oneDNN's packed copies, per dtype and batch size, interleaved.

For a batch of B sequences decoding together, every decode step multiplies B activation rows by
each layer projection and the lm_head. NNSC_QUANT_DECODE=B sends those products to the
quantized GEMV kernels on the file's blocks (QuantizedLinear.h); NNSC_QUANT_DECODE=B-1 sends
them where the engine sends anything over the row limit: oneDNN's copies packed from the
blocks (ProjectionForms::BlocksAndPacked; the lm_head's on its first such product).
Everything else is the same run: the
same B prompts of equal length (so every decode step has B rows), greedy, EOS ignored. The
decode rate is nns-run's own (tokens after each request's first, per second); the default row
limit should be the largest B where the blocks are still faster.

usage: .venv/bin/python bench/quant_crossover.py [--build DIR] [--model GGUF]
           [--batches 2,4,6,8,12,16,24] [--dtypes fp32,bf16] [--rounds 3] [--max-tokens 64]

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import os
import statistics

from nnsrun import ROOT, log, nns_run


def prompts(batch, length):
    """`batch` distinct prompts of `length` token ids each (no prefix shared between them)."""
    return [{"ids": [100 + 7 * i + j for j in range(length)]} for i in range(batch)]


def decode_rate(build, model, dtype, batch, limit, max_tokens):
    env = dict(os.environ, NNSC_QUANT_DECODE=str(limit))
    r = nns_run(build, model, prompts(batch, 16),
                ["--dtype", dtype, "--max-tokens", str(max_tokens), "--max-num-seqs", str(batch),
                 "--threads", "2"], env=env, quiet=True)
    if r["generated"] != batch * max_tokens:
        raise SystemExit("expected %d tokens, got %d" % (batch * max_tokens, r["generated"]))
    return r["decode"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--batches", default="2,4,6,8,12,16,24")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if min(batches) < 2:
        raise SystemExit("--batches: each batch must be at least 2 (B-1 rows must stay on)")

    rows = []
    for dtype in args.dtypes.split(","):
        for batch in batches:
            blocks, packed = [], []
            for rnd in range(args.rounds):
                # Interleaved: the two paths alternate, and which goes first alternates too.
                order = [(blocks, batch), (packed, batch - 1)]
                for out, limit in (order if rnd % 2 == 0 else order[::-1]):
                    out.append(decode_rate(args.build, args.model, dtype, batch, limit,
                                           args.max_tokens))
            b, p = statistics.median(blocks), statistics.median(packed)
            log("%s B=%d: blocks %.1f tok/s, packed %.1f tok/s (%.2fx)" % (dtype, batch, b, p,
                                                                          b / p))
            rows.append((dtype, batch, b, p))

    print("| dtype | batch | blocks (tok/s) | oneDNN packed (tok/s) | blocks / packed |")
    print("|---|---:|---:|---:|---:|")
    for dtype, batch, b, p in rows:
        print("| %s | %d | %.1f | %.1f | %.2fx |" % (dtype, batch, b, p, b / p))
    print("\n%s, medians of %d interleaved rounds, %d decode steps of B rows each."
          % (os.path.basename(args.model), args.rounds, args.max_tokens - 1))


if __name__ == "__main__":
    main()

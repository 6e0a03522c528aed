"""The engine with nnsc's GEMM (oneDNN, packed weights) against LibTorch's at::linear
(NNSC_GEMM=libtorch), runs alternated so both see the same machine state: prefill (16 x 512
tokens), batch-1 decode and a batch of concurrent requests, in fp32 and bf16. Prints one
Markdown row per benchmark with both rates and their ratio (best of --rounds each).

usage: .venv/bin/python bench/gemm_ab.py [--build DIR] [--model GGUF] [--rounds N]
                                         [--requests N] [--dtypes fp32,bf16]
"""

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nnsrun import ROOT, log, nns_run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model",
                    default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--dtypes", default="fp32,bf16")
    a = ap.parse_args()
    rng = random.Random(0)
    long_prompts = [{"ids": [rng.randrange(1, 49152) for _ in range(512)], "max_tokens": 1}
                    for _ in range(16)]
    short = [{"ids": [rng.randrange(1, 49152) for _ in range(8)]}]
    work = [{"ids": [rng.randrange(1, 49152) for _ in range(rng.randint(32, 256))],
             "max_tokens": rng.randint(32, 128)} for _ in range(a.requests)]
    benches = [
        ("prefill (16 x 512 tokens)", long_prompts, ["--max-tokens", "1"],
         lambda r: r["prompt"] / r["seconds"]),
        ("batch-1 decode (128 tokens)", short, ["--max-tokens", "128"], lambda r: r["decode"]),
        ("throughput (%d requests)" % a.requests, work, ["--max-tokens", "128"],
         lambda r: r["generated"] / r["seconds"]),
    ]
    print("| benchmark | dtype | nnsc GEMM tok/s | at::linear tok/s | ratio |")
    print("|---|---|---|---|---|")
    for name, prompts, extra, rate in benches:
        for dtype in a.dtypes.split(","):
            best = {"nnsc": 0.0, "libtorch": 0.0}
            for _ in range(a.rounds):
                for variant in best:
                    if variant == "libtorch":
                        os.environ["NNSC_GEMM"] = "libtorch"
                    else:
                        os.environ.pop("NNSC_GEMM", None)
                    log("%s, %s, %s" % (name, dtype, variant))
                    r = nns_run(a.build, a.model, prompts, extra + ["--dtype", dtype])
                    best[variant] = max(best[variant], rate(r))
            os.environ.pop("NNSC_GEMM", None)
            print("| %s | %s | %.1f | %.1f | %.2f |" % (name, dtype, best["nnsc"],
                                                        best["libtorch"],
                                                        best["nnsc"] / best["libtorch"]),
                  flush=True)


if __name__ == "__main__":
    main()

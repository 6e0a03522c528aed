"""Tensor parallelism against one rank, side by side in one run: nns-run with the model split
over --tp ranks of one thread each against nns-run on one rank with --threads threads (the
same cores), on model_bench's 64-request workload (in/out lengths U(32, 256), seeded) and on
batch-1 decode (128 tokens). Rounds interleave the two configurations; the table gives the
median and the range. Every TP row also gives rank 0's time in collectives per engine step
(Gloo over loopback), which is the cost model docs/Distributed.md describes; and
nnsc-bench-collectives times one all-reduce and one all-gather alone, over 2 and --tp ranks.

usage: .venv/bin/python bench/tp_bench.py [--build DIR] [--model GGUF] [--tp N] [--threads T]
                                          [--rounds R] [--requests N]

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import os
import random
import statistics
import subprocess
import time

from nnsrun import ROOT, log, nns_run


def median_range(values, fmt):
    return "%s (rounds %s-%s)" % (fmt % statistics.median(values), fmt % min(values),
                                  fmt % max(values))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--tp", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=64)
    a = ap.parse_args()

    rng = random.Random(0)
    work = [{"ids": [rng.randrange(1, 49152) for _ in range(rng.randint(32, 256))],
             "max_tokens": rng.randint(32, 256)} for _ in range(a.requests)]
    short = [{"prompt": "The capital of France is", "max_tokens": 128}]
    configs = {
        "TP=1, %d threads" % a.threads: ["--threads", str(a.threads)],
        "TP=%d, 1 thread per rank" % a.tp: ["--tensor-parallel-size", str(a.tp),
                                             "--threads", "1"],
    }
    results = {(name, kind): [] for name in configs for kind in ("work", "decode")}
    started = time.time()
    for rnd in range(a.rounds):
        for kind, prompts, extra in (("work", work, ["--max-tokens", "256"]),
                                     ("decode", short, ["--max-tokens", "128"])):
            for name, flags in configs.items():
                log("round %d/%d: %s, %s" % (rnd + 1, a.rounds, kind, name))
                results[(name, kind)].append(nns_run(a.build, a.model, prompts, extra + flags))
    names = list(configs)
    same = all(r["ids"] == results[(names[0], k)][0]["ids"]
               for (n, k), rs in results.items() for r in rs)

    print("| configuration | %d requests: tok/s | time in collectives per step "
          "| batch-1 decode tok/s | time in collectives per decode step |" % a.requests)
    print("|---|---|---|---|---|")
    for name in names:
        w, d = results[(name, "work")], results[(name, "decode")]
        tp = "TP=1" not in name
        print("| %s | %s | %s | %s | %s |" % (
            name,
            median_range([r["generated"] / r["seconds"] for r in w], "%.1f"),
            median_range([r["comm_ms_per_step"] for r in w], "%.1f ms") if tp else "-",
            median_range([r["decode"] for r in d], "%.1f"),
            median_range([r["comm_ms_per_step"] for r in d], "%.2f ms") if tp else "-"))
    base_w = statistics.median(r["generated"] / r["seconds"] for r in results[(names[0], "work")])
    tp_w = statistics.median(r["generated"] / r["seconds"] for r in results[(names[1], "work")])
    base_d = statistics.median(r["decode"] for r in results[(names[0], "decode")])
    tp_d = statistics.median(r["decode"] for r in results[(names[1], "decode")])
    print()
    for ranks in sorted({2, a.tp}):
        port = 29700 + ranks
        bench = os.path.join(a.build, "bin", "nnsc-bench-collectives")
        procs = [subprocess.Popen([bench], env=dict(os.environ, RANK=str(r),
                                                   WORLD_SIZE=str(ranks), MASTER_PORT=str(port)),
                                  stdout=subprocess.PIPE, text=True) for r in range(ranks)]
        for line in procs[0].communicate()[0].splitlines():
            print("- " + line)
        for p in procs[1:]:
            p.wait()
    print()
    print("%s vs %s: %.2fx on the %d-request workload, %.2fx on batch-1 decode; greedy "
          "tokens %s (%d rounds, %.0f s)" % (names[1], names[0], tp_w / base_w, a.requests,
                                              tp_d / base_d,
                                              "identical" if same else "DIFFER",
                                              a.rounds, time.time() - started))


if __name__ == "__main__":
    main()

"""nns-serve over tensor-parallel ranks against one rank, in the same run: 64 concurrent HTTP
requests (random prompts of U(32, --max-len) tokens, U(32, --max-len) generated tokens each,
greedy, ignore_eos) to `nns-serve --tensor-parallel-size N` for each N of --sizes, one server
at a time, with the threads split over the ranks; and where rank 0's time goes per engine step
(its /metrics: step latency, seconds in collectives, bytes sent to the other ranks).

usage: .venv/bin/python bench/tp_serve_bench.py [--build DIR] [--model GGUF] [--sizes 1,3]
           [--max-len N] [--threads N]

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import concurrent.futures
import os
import random
import sys
import time

import httpx

from nnsrun import ROOT, log, print_load_average, print_table

sys.path.insert(0, os.path.join(ROOT, "test", "Runtime", "Server"))
from serve import Server  # noqa: E402


def workload(max_len):
    rng = random.Random(0)
    return [{"ids": [rng.randrange(1, 49152) for _ in range(rng.randint(32, max_len))],
             "max_tokens": rng.randint(32, max_len)} for _ in range(64)]


def run(url, name, work):
    def one(p):
        with httpx.Client(base_url=url, timeout=1800) as c:
            r = c.post("/v1/completions", json={
                "model": name, "prompt": p["ids"], "max_tokens": p["max_tokens"],
                "temperature": 0, "ignore_eos": True, "return_token_ids": True})
            r.raise_for_status()
            return r.json()["choices"][0]["token_ids"]
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(len(work)) as pool:
        tokens = list(pool.map(one, work))
    return tokens, time.time() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--sizes", default="1,3")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    work = workload(a.max_len)
    rows, reference = [], None
    for size in [int(s) for s in a.sizes.split(",")]:
        threads = max(1, a.threads // size)
        log("nns-serve --tensor-parallel-size %d --threads %d: 64 requests" % (size, threads))
        args = ["--model", a.model, "--threads", str(threads), "--tensor-parallel-size", str(size),
                "--max-num-seqs", "64"]
        with Server(os.path.join(a.build, "bin", "nns-serve"), args) as server:
            name = httpx.get(server.url + "/v1/models").json()["data"][0]["id"]
            tokens, seconds = run(server.url, name, work)
            m = server.metrics()
        generated = sum(len(t) for t in tokens)
        steps = m.get("nnsc_engine_step_seconds_count", 0)
        step_ms = 1e3 * m.get("nnsc_engine_step_seconds_sum", 0) / max(steps, 1)
        comm_ms = 1e3 * m.get("nnsc_tensor_parallel_collective_seconds_total", 0) / max(steps, 1)
        sent = m.get('nnsc_tensor_parallel_bytes_total{part="requests"}', 0)
        messages = m.get("nnsc_tensor_parallel_messages_total", 0)
        same = "-" if reference is None else "%d/64" % sum(
            x == y for x, y in zip(tokens, reference))
        reference = reference or tokens
        rows.append([str(size), "%.1f tok/s" % (generated / seconds), "%d" % steps,
                     "%.1f ms" % step_ms, "%.1f ms" % comm_ms if size > 1 else "-",
                     "%d B in %d messages" % (sent, messages) if size > 1 else "-", same])
    print_table(["ranks", "throughput", "steps", "step (mean)", "collectives per step",
                 "requests sent to the other ranks", "same tokens as TP=1"], rows)
    print_load_average()


if __name__ == "__main__":
    main()

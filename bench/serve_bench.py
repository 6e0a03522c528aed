"""nns-serve against nns-run offline, in the same run: the 64-request workload of
model_bench.py (random prompts of U(32, 256) tokens, U(32, 256) generated tokens each, greedy,
ignore_eos) sent as 64 concurrent HTTP requests vs the same requests in one nns-run process,
rounds interleaved; and what a compile-cache hit adds to a request (sequential one-token
requests: plain vs the same cached program vs the program's first, compiling, request).

usage: .venv/bin/python bench/serve_bench.py [--build DIR] [--model GGUF] [--rounds N]

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import concurrent.futures
import os
import random
import statistics
import sys
import time

import httpx

from nnsrun import ROOT, log, nns_run

sys.path.insert(0, os.path.join(ROOT, "test", "Runtime", "Server"))
from serve import Server  # noqa: E402


def workload():
    rng = random.Random(0)
    return [{"ids": [rng.randrange(1, 49152) for _ in range(rng.randint(32, 256))],
             "max_tokens": rng.randint(32, 256)} for _ in range(64)]


def offline(build, model, work):
    """Generated tokens and engine seconds of nns-run on `work` (its own statistics line)."""
    r = nns_run(build, model, work, ["--max-tokens", "256"], quiet=True)
    return r["generated"], r["seconds"]


def online(url, name, work):
    """Generated tokens and wall seconds of `work` as concurrent requests to the server."""
    def one(p):
        with httpx.Client(base_url=url, timeout=600) as c:
            r = c.post("/v1/completions", json={
                "model": name, "prompt": p["ids"], "max_tokens": p["max_tokens"],
                "temperature": 0, "ignore_eos": True})
            r.raise_for_status()
            return r.json()["usage"]["completion_tokens"]
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(len(work)) as pool:
        tokens = sum(pool.map(one, work))
    return tokens, time.time() - start


def request_latency(http, name, nns, n):
    times = []
    for _ in range(n):
        body = {"model": name, "prompt": "The capital of France is", "max_tokens": 1,
                "temperature": 0}
        if nns:
            body["nns"] = nns
        start = time.perf_counter()
        http.post("/v1/completions", json=body).raise_for_status()
        times.append(time.perf_counter() - start)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    work = workload()
    rows = []
    with Server(os.path.join(a.build, "bin", "nns-serve"), ["--model", a.model]) as s:
        http = httpx.Client(base_url=s.url, timeout=600)
        name = http.get("/v1/models").json()["data"][0]["id"]
        off, on = [], []
        for r in range(a.rounds):
            log(f"round {r + 1}/{a.rounds}: nns-run offline, 64 requests")
            tokens, secs = offline(a.build, a.model, work)
            off.append(tokens / secs)
            log(f"  {tokens} tokens in {secs:.1f} s = {tokens / secs:.1f} tok/s")
            log(f"round {r + 1}/{a.rounds}: nns-serve, 64 concurrent HTTP requests")
            tokens, secs = online(s.url, name, work)
            on.append(tokens / secs)
            log(f"  {tokens} tokens in {secs:.1f} s = {tokens / secs:.1f} tok/s")
        rows.append(("throughput, 64 requests (offline: nns-run; server: nns-serve over HTTP)",
                     "offline %s tok/s, server %s tok/s: server at %.0f%% of offline (median)"
                     % ("/".join("%.1f" % x for x in off), "/".join("%.1f" % x for x in on),
                        100 * statistics.median(on) / statistics.median(off))))

        program = {"program": "trace { t = samples.save() }"}
        log("compile-cache hit: sequential one-token requests")
        first = request_latency(http, name, program, 1)[0]
        plain, cached = [], []
        for _ in range(5):
            plain += request_latency(http, name, None, 20)
            cached += request_latency(http, name, program, 20)
        p, c = statistics.median(plain), statistics.median(cached)
        rows.append(("one-token request latency (median of 100)",
                     "plain %.2f ms, cached program %.2f ms (+%.2f ms: lookup, binding, kernel, "
                     "saves in JSON); first request of the program %.0f ms (compiles)"
                     % (p * 1e3, c * 1e3, (c - p) * 1e3, first * 1e3)))
    print("| measurement | result |\n| --- | --- |")
    for k, v in rows:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()

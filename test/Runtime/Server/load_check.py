"""A bounded load test of nns-serve: CLIENTS concurrent clients for SECONDS on loopback, a mix
of plain, steered, captured and invalid requests. Every valid request must come back with the
result it gets alone (computed first, one at a time), every invalid one with its error;
nothing may be lost. Prints requests/s, tokens/s and p50/p99 latency.

Usage: load_check.py NNS_SERVE MODEL [CLIENTS] [SECONDS]
"""
import base64
import concurrent.futures
import os
import sys
import threading
import time

import httpx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import Server  # noqa: E402

STEER = """param steer: f32[hidden]
trace { for step in steps { layers[10].output += steer } }
"""


def saves_of(body):
    out = {}
    for name, obj in (body.get("nns") or {}).get("saves", {}).items():
        data = bytearray(base64.b64decode(obj["data"]))
        out[name] = torch.frombuffer(data, dtype=getattr(torch, obj["dtype"])).reshape(obj["shape"])
    return out


def variants(model):
    """(body, expected status) of each kind of request the clients send."""
    prompts = ["The capital of France is", "Alice went to the market and bought",
               "The Eiffel Tower is located in", "Once upon a time"]
    out = []
    for i, prompt in enumerate(prompts):
        base = {"model": model, "prompt": prompt, "max_tokens": 8 + 2 * i, "temperature": 0,
                "return_token_ids": True}
        out.append((dict(base), 200))
        steer = torch.randn(576, generator=torch.Generator().manual_seed(i)) * (4 + i)
        out.append((dict(base, nns={"program": STEER, "params": {"steer": steer.tolist()}}), 200))
        out.append((dict(base, nns={"program": f"trace {{ h = layers[{3 * i}].output[-1].save(); "
                                               "for step in steps[0:4] { t = logits.argmax().save() } }"}), 200))
    out.append(({"model": model, "prompt": "x", "nns": {"program": "trace { h = layers[3.output }"}}, 400))
    out.append(({"model": model, "prompt": "x", "max_tokens": -1}, 400))
    out.append(({"model": model, "prompt": "x", "max_tokens": 4, "temperature": 0,
                 "nns": {"program": "trace { h = layers[1].output[6].save() }"}}, 400))
    return out


def main():
    nns_serve, model_path = sys.argv[1:3]
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    with Server(nns_serve, ["--model", model_path, "--http-threads", str(clients + 8)]) as s:
        http = httpx.Client(base_url=s.url, timeout=300)
        name = http.get("/v1/models").json()["data"][0]["id"]
        kinds = variants(name)
        reference = []
        for body, status in kinds:
            r = http.post("/v1/completions", json=body)
            if r.status_code != status:
                sys.exit(f"FAIL: reference request got {r.status_code}: {r.text[:300]}")
            reference.append(r.json())

        lock = threading.Lock()
        latencies, tokens, failures = [], [0], []
        counts = {"valid": 0, "invalid": 0}
        stop_at = time.time() + seconds

        def client(k):
            c = httpx.Client(base_url=s.url, timeout=300)
            i = k
            while time.time() < stop_at:
                body, status = kinds[i % len(kinds)]
                ref = reference[i % len(kinds)]
                i += 7
                start = time.time()
                r = c.post("/v1/completions", json=body)
                took = time.time() - start
                got = r.json()
                problem = None
                if r.status_code != status:
                    problem = f"status {r.status_code} != {status}: {r.text[:200]}"
                elif status == 200:
                    if got["choices"][0]["token_ids"] != ref["choices"][0]["token_ids"]:
                        problem = "tokens differ from the request alone"
                    else:
                        a, b = saves_of(got), saves_of(ref)
                        if sorted(a) != sorted(b) or not all(
                                torch.allclose(a[n].float(), b[n].float(), atol=1e-4, rtol=1e-4)
                                for n in a):
                            problem = "saves differ from the request alone"
                elif got["error"]["message"] != ref["error"]["message"]:
                    problem = "another error message than alone"
                with lock:
                    if problem:
                        failures.append(problem)
                    latencies.append(took)
                    counts["valid" if status == 200 else "invalid"] += 1
                    if status == 200:
                        tokens[0] += got["usage"]["completion_tokens"]

        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(clients) as pool:
            list(pool.map(client, range(clients)))
        wall = time.time() - start
        if failures:
            sys.exit(f"FAIL: {len(failures)} requests wrong, first: {failures[0]}")
        m = s.metrics()
        if m["nnsc_num_requests_running"] != 0 or m["nnsc_kv_blocks_used"] != 0:
            sys.exit(f"FAIL: the engine holds work after the load: {m}")
        latencies.sort()
        n = len(latencies)
        print(f"load: {clients} clients for {seconds:.0f} s: {n} requests ({counts['valid']} valid, "
              f"{counts['invalid']} invalid), none lost or wrong")
        print(f"load: {n / wall:.1f} requests/s, {tokens[0] / wall:.1f} generated tok/s, latency "
              f"p50 {latencies[n // 2] * 1000:.0f} ms, p99 {latencies[min(n - 1, int(n * 0.99))] * 1000:.0f} ms")


if __name__ == "__main__":
    main()

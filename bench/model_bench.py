"""Engine benchmarks: decode vs the bandwidth roofline, throughput vs transformers generate
(fp32 and bf16, like with like, with the achieved GFLOP/s), prefill, prefix-cache speedup.
Every number comes from this run on this machine. --hf-requests N runs transformers on the
first N requests only; its tok/s is then over those requests (stated in the row).

usage: .venv/bin/python bench/model_bench.py [--build DIR] [--model GGUF] [--hf-requests N]
                                             [--hf-batch B] [--hf-single-requests N]
                                             [--skip-hf] [--dtypes fp32,bf16]
                                             [--decode-rounds N]

transformers runs twice per dtype: batched by --hf-batch with left padding (static batching
done carefully), and one request at a time on the first --hf-single-requests requests (plain
`generate` per prompt, as most scripts call it); the engine's ratio is given against both.

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import functools
import os
import random
import re
import statistics
import subprocess
import sys
import time

from nnsrun import ROOT, log, nns_run


def parameter_count(model):
    """Parameters of the GGUF: every tensor once (a tied lm_head is the embedding)."""
    import gguf
    r = gguf.GGUFReader(model)
    return sum(int(t.n_elements) for t in r.tensors)


def weight_bytes(model, dtype):
    """Bytes of weights a decode step reads: every parameter once (tied lm_head = embedding,
    which decode reads as lm_head; the embedding lookup reads one row)."""
    return parameter_count(model) * (4 if dtype == "fp32" else 2)


def gflops(params, tokens, seconds):
    """Achieved GFLOP/s counting 2 x params per computed token (prompt and generated). It
    slightly overstates the work: prompt rows skip the lm_head except each prompt's last."""
    return 2.0 * params * tokens / seconds / 1e9


@functools.lru_cache(maxsize=1)
def transformers_model(model_path, dtype):
    """The same GGUF through transformers in `dtype`, loaded once for both baselines."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
    from reference import load_gguf_reference
    log("transformers: loading the same GGUF, %s" % dtype)
    model, _ = load_gguf_reference(model_path)
    return model.to(torch.bfloat16) if dtype == "bf16" else model


def transformers_throughput(model_path, work, batch, dtype):
    """transformers generate on `work`: greedy, in `dtype` (fp32 or bf16), the machine's
    threads, requests sorted by output length and run in batches of `batch` with left padding
    (what a careful user of static batching does). Each batch generates its longest request's
    length; only each request's own max_tokens count as generated, the rest is the cost of
    static batching. Returns (generated tokens, prompt tokens, seconds, requests)."""
    import torch
    model = transformers_model(model_path, dtype)
    order = sorted(work, key=lambda r: r["max_tokens"])
    generated, seconds = 0, 0.0
    for start in range(0, len(order), batch):
        group = order[start:start + batch]
        width = max(len(r["ids"]) for r in group)
        ids = torch.tensor([[0] * (width - len(r["ids"])) + r["ids"] for r in group])
        mask = torch.tensor([[0] * (width - len(r["ids"])) + [1] * len(r["ids"])
                             for r in group])
        new = max(r["max_tokens"] for r in group)
        log("transformers generate requests %d-%d of %d (%d new tokens)"
            % (start + 1, start + len(group), len(order), new))
        begin = time.time()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=mask, max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False, pad_token_id=0)
        seconds += time.time() - begin
        assert out.shape[1] - width == new
        generated += sum(r["max_tokens"] for r in group)
    prompt = sum(len(r["ids"]) for r in order)
    return generated, prompt, seconds, len(order)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--hf-requests", type=int, default=64,
                    help="requests of the workload run through transformers generate")
    ap.add_argument("--hf-batch", type=int, default=8,
                    help="transformers generate batch size")
    ap.add_argument("--hf-single-requests", type=int, default=16,
                    help="requests run through transformers generate one at a time (0: none)")
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--decode-rounds", type=int, default=4,
                    help="rounds of bandwidth probe, batch-1 decode per dtype, probe")
    a = ap.parse_args()
    rows = []

    def measure_bandwidth():
        log("read bandwidth (2 threads)")
        out = subprocess.run([os.path.join(a.build, "bin", "nnsc-bench-bandwidth"),
                              "--threads", "2"], capture_output=True, text=True,
                             check=True).stdout
        return float(re.search(r"read bandwidth: ([0-9.]+) GB/s", out).group(1))

    rng = random.Random(0)
    short = [{"ids": [rng.randrange(1, 49152) for _ in range(8)]}]
    # This machine's read bandwidth moves by a third from one second to the next, so each
    # round brackets its decode runs with two probes and is judged against the higher (the
    # stricter roofline); the rounds' median fraction is the result. The rounds measure the
    # widened weights (NNSC_QUANT_DECODE=off), whose bytes weight_bytes counts; decode on the
    # file's own blocks, against their bytes, is bench/peer_bench.py's.
    widened = dict(os.environ, NNSC_QUANT_DECODE="off")
    fractions = {dtype: [] for dtype in a.dtypes.split(",")}
    for rnd in range(a.decode_rounds):
        before = measure_bandwidth()
        rates = {}
        for dtype in fractions:
            log("batch-1 decode, %s, round %d/%d" % (dtype, rnd + 1, a.decode_rounds))
            rates[dtype] = nns_run(a.build, a.model, short,
                                   ["--max-tokens", "128", "--dtype", dtype],
                                   env=widened)["decode"]
        after = measure_bandwidth()
        bandwidth = max(before, after)
        rows.append(("decode round %d: read bandwidth before, after" % (rnd + 1),
                     "%.1f GB/s, %.1f GB/s" % (before, after)))
        for dtype, rate in rates.items():
            roof = bandwidth * 1e9 / weight_bytes(a.model, dtype)
            fractions[dtype].append(rate / roof)
            rows.append(("decode round %d: batch-1 decode %s" % (rnd + 1, dtype),
                         "%.1f tok/s = %.0f%% of roofline %.1f tok/s"
                         % (rate, 100 * rate / roof, roof)))
    for dtype, f in fractions.items():
        if not f:
            continue
        rows.append(("batch-1 decode %s, median of %d rounds" % (dtype, len(f)),
                     "%.0f%% of roofline (rounds %.0f%%-%.0f%%)"
                     % (100 * statistics.median(f), 100 * min(f), 100 * max(f))))

    log("prefill: 16 prompts x 512 tokens, fp32")
    long_prompts = [{"ids": [rng.randrange(1, 49152) for _ in range(512)], "max_tokens": 1}
                    for _ in range(16)]
    r = nns_run(a.build, a.model, long_prompts, ["--max-tokens", "1"])
    rows.append(("prefill fp32 (16 x 512 tokens)", "%.0f tok/s" % (r["prompt"] / r["seconds"])))

    log("prefix cache: 32 prompts sharing a 480-token prefix")
    prefix = [rng.randrange(1, 49152) for _ in range(480)]
    shared = [{"ids": prefix + [rng.randrange(1, 49152) for _ in range(32)], "max_tokens": 1}
              for _ in range(32)]
    limit = ["--max-tokens", "1", "--max-num-batched-tokens", "1024"]
    on = nns_run(a.build, a.model, shared, limit)
    off = nns_run(a.build, a.model, shared, limit + ["--no-prefix-caching"])
    rows.append(("prefix cache (32 x 512 tokens, 480 shared)",
                 "%.2f s vs %.2f s without: %.1fx (%d hit tokens)"
                 % (on["seconds"], off["seconds"], off["seconds"] / on["seconds"], on["hits"])))

    work = [{"ids": [rng.randrange(1, 49152) for _ in range(rng.randint(32, 256))],
             "max_tokens": rng.randint(32, 256)} for _ in range(64)]
    params = parameter_count(a.model)
    for dtype in a.dtypes.split(","):
        log("throughput %s: 64 requests, in/out lengths U(32, 256)" % dtype)
        r = nns_run(a.build, a.model, work, ["--max-tokens", "256", "--dtype", dtype])
        ours = r["generated"] / r["seconds"]
        rows.append(("throughput %s, 64 requests" % dtype,
                     "%d tokens in %.1f s = %.1f tok/s, %.0f GFLOP/s"
                     % (r["generated"], r["seconds"], ours,
                        gflops(params, r["prompt"] + r["generated"], r["seconds"]))))
        if a.skip_hf:
            continue
        baselines = [(a.hf_requests, a.hf_batch)]
        if a.hf_single_requests > 0:
            baselines.append((a.hf_single_requests, 1))
        for requests, batch in baselines:
            hf_tokens, hf_prompt, hf_seconds, n = transformers_throughput(
                a.model, work[:requests], batch, dtype)
            hf = hf_tokens / hf_seconds
            how = ("one at a time" if batch == 1
                   else "batches of %d, left padded" % batch)
            rows.append(("transformers generate %s (%d requests, %s)" % (dtype, n, how),
                         "%d tokens in %.1f s = %.1f tok/s, %.0f GFLOP/s"
                         % (hf_tokens, hf_seconds, hf,
                            gflops(params, hf_prompt + hf_tokens, hf_seconds))))
            rows.append(("throughput ratio %s vs transformers %s" % (dtype, how),
                         "%.1fx" % (ours / hf)))

    print("| benchmark | result |\n|---|---|")
    for k, v in rows:
        print("| %s | %s |" % (k, v))
    print("\nload average during the run: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()

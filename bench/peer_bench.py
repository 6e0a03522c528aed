"""nns-run against llama.cpp on the same GGUF file: batch-1 decode, prefill, peak RSS.

The peer a user would pick for a Q4_1 GGUF on a CPU is llama.cpp. Both run in this one
benchmark, on the same file with the same threads, in interleaved rounds (llama.cpp, nns-run
with the quantized decode path and fp32 activations, the same with bf16 activations, on an
AVX-512 CPU also with its AVX2 kernels, both dtypes again with the file's blocks as the only
resident copy of the weights (`--weights blocks`), nns-run with the widened weights, then
again), each run in its own process so that its peak RSS is its own (os.wait4). Each reports:
- decode: greedy tokens per second after the first, 128 tokens after "The capital of France
  is" with EOS ignored (nns-run: its "then N tok/s"; llama.cpp: the wall time of tokens 2..128
  of `Llama.generate`, the same loop its own examples use);
- prefill: prompt tokens per second of one long prompt (nns-run: prompt tokens over its time
  to first token; llama.cpp: the same over the time to the first generated token);
- peak RSS of the process.
The table gives the medians and the ratios. "% of roofline" divides each engine's decode rate
by its roofline: the read bandwidth (the higher of nnsc-bench-bandwidth's probes before and
after, each the fastest of four ways to read) over the bytes one of its decode steps reads,
every weight of the file once (the widened weights' fp32 bytes for the widened row) plus the
K/V cache the step attends to, at the engine's K/V precision (llama.cpp: f16, its default;
nns-run: its compute dtype) and the mean context of the measured steps.

llama.cpp comes from bench/setup-llama-cpp (llama-cpp-python built from source into a
bench-only venv, AMX off). Run that first.

usage: .venv/bin/python bench/peer_bench.py [--build DIR] [--model GGUF] [--threads N]
           [--rounds N] [--decode-tokens N] [--prefill-tokens N] [--llama-python PATH]

Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from nnsrun import ROOT, log, parse_stats, run_measured

DECODE_PROMPT = "The capital of France is"

# Runs inside the bench-only venv: one measurement, printed as one JSON line.
LLAMA_WORKER = r"""
import json, sys, time
from llama_cpp import Llama
model, threads, prompt_ids, max_tokens = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
llm = Llama(model_path=model, n_threads=threads, n_threads_batch=threads, n_ctx=1024,
            n_batch=512, n_ubatch=512, verbose=False)
start = time.perf_counter()
first = None
out = []
for tok in llm.generate(prompt_ids, temp=0.0, top_k=1, reset=True):
    now = time.perf_counter()
    if first is None:
        first = now
    out.append(tok)
    if len(out) == max_tokens:
        break
end = time.perf_counter()
print(json.dumps({"ttft": first - start, "decode_seconds": end - first, "tokens": out}))
"""


def nns_run(a, ids, max_tokens, quantized, avx512=True, dtype="fp32", weights="packed"):
    env = dict(os.environ, NNSC_QUANT_DECODE="on" if quantized else "off",
               NNSC_QUANT_AVX512="1" if avx512 else "0")
    cmd = [os.path.join(a.build, "bin", "nns-run"), "--model", a.model, "--dtype", dtype,
           "--prompt-ids", ",".join(map(str, ids)), "--max-tokens", str(max_tokens),
           "--ignore-eos", "--temperature", "0", "--threads", str(a.threads), "--json",
           "--max-model-len", "1024", "--weights", weights]
    stdout, stderr, rss = run_measured(cmd, env)
    stats = parse_stats(stderr)
    if stats["ttft"] is None:
        sys.exit("nns-run printed no timing line:\n" + stderr)
    tokens = json.loads(stdout.splitlines()[0])["ids"]
    return dict(ttft=stats["ttft"], decode=stats["decode"], rss=rss, tokens=tokens)


def llama_cpp(a, ids, max_tokens):
    cmd = [a.llama_python, "-c", LLAMA_WORKER, a.model, str(a.threads), json.dumps(ids),
           str(max_tokens)]
    stdout, _, rss = run_measured(cmd)
    r = json.loads(stdout.splitlines()[-1])
    decode = (len(r["tokens"]) - 1) / r["decode_seconds"] if len(r["tokens"]) > 1 else None
    return dict(ttft=r["ttft"], decode=decode, rss=rss, tokens=r["tokens"])


def has_avx512():
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    return all(x in flags for x in ("avx512f", "avx512bw", "avx512vl"))


def bandwidth(a):
    out = subprocess.run([os.path.join(a.build, "bin", "nnsc-bench-bandwidth"),
                          "--threads", str(a.threads)], capture_output=True, text=True,
                         check=True).stdout
    return float(re.search(r"read bandwidth: ([0-9.]+) GB/s", out).group(1))


def decode_bytes(model):
    """What one decode step reads of the weights: every tensor's blocks once (a tied lm_head
    reads the embedding whole; the lookup's one row is left out), and the same tensors as the
    widened fp32 weights (4 bytes each); and the K/V cache elements per token of context
    (layers x 2 x KV heads x head dim)."""
    import gguf
    r = gguf.GGUFReader(model)

    def field(key):
        f = r.fields[key]
        return int(f.parts[f.data[0]][0])
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    heads = field(arch + ".attention.head_count")
    head_dim = (field(arch + ".attention.key_length") if arch + ".attention.key_length" in r.fields
                else field(arch + ".embedding_length") // heads)
    kv_per_token = field(arch + ".block_count") * 2 * field(arch + ".attention.head_count_kv") \
        * head_dim
    return (sum(int(t.n_bytes) for t in r.tensors), sum(4 * int(t.n_elements) for t in r.tensors),
            kv_per_token)


# Runs in a child process: the prompts' token ids through the file's tokenizer (transformers,
# on the reference's converted directory), printed as one JSON line.
TOKENIZE_WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from reference import gguf_reference_dir
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(gguf_reference_dir(sys.argv[2]))
decode_prompt, words, prefill_tokens = sys.argv[3], sys.argv[4], int(sys.argv[5])
long_text, prefill_ids = "", []
while len(prefill_ids) < prefill_tokens:
    long_text += words + " "
    prefill_ids = tok(long_text)["input_ids"]
print(json.dumps({"decode": tok(decode_prompt)["input_ids"],
                  "prefill": prefill_ids[:prefill_tokens]}))
"""


def prompt_ids(model, prefill_tokens):
    """The decode prompt's token ids and `prefill_tokens` ids of a long prompt. Tokenized in a
    child process: a parent that loaded transformers (or converted the reference model) would
    pass its resident set on to every engine it starts, whose ru_maxrss counts the memory its
    forked copy had before exec, so each engine's peak RSS would read as at least the parent's."""
    words = ("The history of the city begins with a small settlement by the river, where "
             "traders and farmers met to exchange grain, salt and cloth.")
    out = subprocess.run([sys.executable, "-c", TOKENIZE_WORKER,
                          os.path.join(ROOT, "test", "lib"), model, DECODE_PROMPT, words,
                          str(prefill_tokens)], check=True, capture_output=True, text=True)
    ids = json.loads(out.stdout.splitlines()[-1])
    return ids["decode"], ids["prefill"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--decode-tokens", type=int, default=128)
    ap.add_argument("--prefill-tokens", type=int, default=512)
    ap.add_argument("--llama-python", default=os.path.expanduser(
        "~/.cache/nnsc/bench-llama-venv/bin/python"))
    a = ap.parse_args()
    if not os.path.exists(a.llama_python):
        sys.exit("no llama.cpp: run bench/setup-llama-cpp first (or give --llama-python)")

    decode_ids, prefill_ids = prompt_ids(a.model, a.prefill_tokens)

    # (name, run, whether it reads the widened fp32 weights, bytes per K/V element: llama.cpp's
    # default f16 cache, nns-run's compute dtype)
    engines = [("llama.cpp", lambda ids, n: llama_cpp(a, ids, n), False, 2),
               ("nns-run, quantized decode", lambda ids, n: nns_run(a, ids, n, True), False, 4),
               ("nns-run, quantized decode, bf16 activations",
                lambda ids, n: nns_run(a, ids, n, True, dtype="bf16"), False, 2),
               ("nns-run, quantized decode, blocks only",
                lambda ids, n: nns_run(a, ids, n, True, weights="blocks"), False, 4),
               ("nns-run, quantized decode, bf16 activations, blocks only",
                lambda ids, n: nns_run(a, ids, n, True, dtype="bf16", weights="blocks"), False, 2),
               ("nns-run, widened fp32", lambda ids, n: nns_run(a, ids, n, False), True, 4)]
    if has_avx512():
        # The same quantized path on the AVX2 kernels, which an AVX-512 CPU also runs.
        engines.insert(3, ("nns-run, quantized decode, AVX2 kernels",
                           lambda ids, n: nns_run(a, ids, n, True, avx512=False), False, 4))
    results = {name: {"decode": [], "prefill": [], "rss": [], "tokens": None}
               for name, *_ in engines}
    bw = [bandwidth(a)]
    log("read bandwidth %.1f GB/s" % bw[-1])
    for rnd in range(a.rounds):
        for name, run, *_ in engines:
            log("round %d/%d: %s, decode %d tokens" % (rnd + 1, a.rounds, name, a.decode_tokens))
            d = run(decode_ids, a.decode_tokens)
            log("  %.1f tok/s, peak RSS %.0f MB" % (d["decode"], d["rss"] / 1e6))
            log("round %d/%d: %s, prefill %d tokens" % (rnd + 1, a.rounds, name,
                                                         len(prefill_ids)))
            p = run(prefill_ids, 1)
            log("  %.1f tok/s" % (len(prefill_ids) / p["ttft"]))
            r = results[name]
            r["decode"].append(d["decode"])
            r["prefill"].append(len(prefill_ids) / p["ttft"])
            r["rss"].append(max(d["rss"], p["rss"]))
            r["tokens"] = d["tokens"]
    bw.append(bandwidth(a))
    log("read bandwidth %.1f GB/s" % bw[-1])

    blocks, widened_bytes, kv_per_token = decode_bytes(a.model)
    # The decode rate counts the steps after the first token: step k (2..N) attends to
    # prompt + k - 1 tokens, prompt + N / 2 on average.
    context = len(decode_ids) + a.decode_tokens / 2
    roofs = {name: max(bw) * 1e9 / ((widened_bytes if widened else blocks)
                                    + kv_per_token * context * kv_element)
             for name, _, widened, kv_element in engines}
    med = {n: {k: statistics.median(v) for k, v in r.items() if k != "tokens"}
           for n, r in results.items()}
    ref = med["llama.cpp"]
    print("| engine | decode tok/s | vs llama.cpp | prefill tok/s | vs llama.cpp | peak RSS |"
          " % of roofline | greedy tokens equal to nns-run's widened fp32 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, *_ in engines:
        m = med[name]
        ours, widened = results[name]["tokens"], results["nns-run, widened fp32"]["tokens"]
        print("| %s | %.1f | %.2fx | %.0f | %.2fx | %.0f MB | %.0f%% | %s |"
              % (name, m["decode"], m["decode"] / ref["decode"], m["prefill"],
                 m["prefill"] / ref["prefill"], m["rss"] / 1e6, 100 * m["decode"] / roofs[name],
                 "%d of %d" % (sum(x == y for x, y in zip(ours, widened)), len(widened))))
    print()
    quantized = "nns-run, quantized decode"
    print("Medians of %d interleaved rounds, %d threads, %s. Decode: %d greedy tokens after %r"
          " (rate after the first). Prefill: one %d-token prompt. Roofline: %.1f GB/s read"
          " bandwidth (the higher of the probes before and after: %s) over the bytes a decode"
          " step reads: %.1f MB of weights (every tensor of the file once; %.1f MB widened to"
          " fp32) plus the K/V cache at a mean context of %.0f tokens, %.2f MB in fp32 (%.2f MB"
          " in f16/bf16): fp32 activations %.0f tok/s, bf16 %.0f tok/s. llama.cpp rounds the"
          " activations to 8 bits in its quantized products (q8_1 blocks against Q4_0/Q4_1,"
          " q8_K against the K-quants), so its greedy"
          " tokens may part from the fp32 computation's; nns-run keeps them fp32."
          % (a.rounds, a.threads, os.path.basename(a.model), a.decode_tokens, DECODE_PROMPT,
             len(prefill_ids), max(bw), ", ".join("%.1f" % b for b in bw), blocks / 1e6,
             widened_bytes / 1e6, context, kv_per_token * context * 4 / 1e6,
             kv_per_token * context * 2 / 1e6, roofs[quantized],
             roofs[quantized + ", bf16 activations"]))


if __name__ == "__main__":
    main()

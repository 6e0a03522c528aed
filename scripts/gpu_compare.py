"""scripts/gpu-check's comparisons and measurements: nns-run on the CUDA backend against the
CPU backend on random Llama models written by transformers on this machine (no model files
travel to a GPU machine), then decode, prefill and throughput on a larger random Llama.

usage: gpu_compare.py BUILD_DIR [--bench 0|1]
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM


def log(msg):
    print(msg, flush=True)


def make_llama(path, hidden, layers, heads, kv_heads, intermediate, vocab, dtype):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, max_position_embeddings=4096,
                         torch_dtype=dtype)
    LlamaForCausalLM(config).to(dtype).save_pretrained(path)
    return path


def nns_run(build, model, device, prompts, extra):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    cmd = [os.path.join(build, "bin", "nns-run"), "--model", model, "--device", device,
           "--prompts", f.name, "--json", "--temperature", "0"] + extra
    proc = subprocess.run(cmd, capture_output=True, text=True)
    os.unlink(f.name)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    ids = [json.loads(line)["ids"] for line in proc.stdout.splitlines()]
    m = re.search(r"generated (\d+) in ([0-9.e+-]+) s", proc.stderr)
    first = re.search(r"first token after ([0-9.e+-]+) s, then ([0-9.e+-]+) tok/s", proc.stderr)
    return ids, int(m.group(1)), float(m.group(2)), float(first.group(1)), float(first.group(2))


def compare(build, work):
    failed = 0
    rng = random.Random(0)
    for name, dims in [("tiny", (64, 4, 4, 2, 96, 128)), ("small", (256, 6, 8, 4, 512, 1000))]:
        model = make_llama(os.path.join(work, name), *dims, torch.float32)
        vocab = dims[-1]
        prompts = [{"ids": [rng.randrange(1, vocab) for _ in range(rng.randint(3, 40))]}
                   for _ in range(8)]
        logits = {}
        tokens = {}
        for device in ("cpu", "cuda"):
            dump = os.path.join(work, f"{name}.{device}.safetensors")
            tokens[device] = nns_run(build, model, device, prompts,
                                     ["--max-tokens", "12", "--dump-logits", dump])[0]
            logits[device] = load_file(dump)
        worst = max(float((logits["cpu"][k] - logits["cuda"][k]).abs().max()) for k in logits["cpu"])
        ok = tokens["cpu"] == tokens["cuda"] and worst <= 1e-3
        failed += not ok
        log(f"{'PASS' if ok else 'FAIL'} {name} Llama {dims}: 8 prompts x 12 tokens, tokens "
            f"{'equal' if tokens['cpu'] == tokens['cuda'] else 'DIFFER'}, max logit diff {worst:.2e}")
    return failed


def measure(build, work):
    model = make_llama(os.path.join(work, "bench"), 2048, 16, 16, 8, 5632, 32000, torch.bfloat16)
    rng = random.Random(0)
    one = [{"ids": [rng.randrange(1, 32000) for _ in range(16)]}]
    _, n, secs, ttft, decode = nns_run(build, model, "cuda", one,
                                       ["--max-tokens", "256", "--ignore-eos", "--dtype", "bf16"])
    log(f"batch-1 decode (random Llama 1.1B, bf16): {decode:.1f} tok/s")
    long = [{"ids": [rng.randrange(1, 32000) for _ in range(2048)]}]
    _, _, _, ttft, _ = nns_run(build, model, "cuda", long,
                               ["--max-tokens", "1", "--dtype", "bf16"])
    log(f"prefill, 2048 tokens: {ttft:.3f} s = {2048 / ttft:.0f} tok/s")
    work64 = [{"ids": [rng.randrange(1, 32000) for _ in range(rng.randint(32, 256))],
               "max_tokens": rng.randint(32, 256)} for _ in range(64)]
    _, n, secs, _, _ = nns_run(build, model, "cuda", work64,
                               ["--max-tokens", "256", "--ignore-eos", "--dtype", "bf16"])
    log(f"throughput, 64 requests: {n} tokens in {secs:.2f} s = {n / secs:.0f} tok/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--bench", type=int, default=1)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_compare.py: no CUDA device")
    with tempfile.TemporaryDirectory() as work:
        failed = compare(a.build, work)
        if a.bench:
            measure(a.build, work)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""scripts/gpu-check's comparisons and measurements: nns-run on the CUDA backend against the
CPU backend on random Llama models written by transformers on this machine (no model files
travel to a GPU machine), then decode, prefill and throughput on a larger random Llama.

usage: gpu_compare.py BUILD_DIR [--bench 0|1] [--bundles DIR]
       gpu_compare.py BUILD_DIR --compile-bundles OUT   (on the development machine)
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


# Programs for the "tiny" Llama of compare() (4 layers), compiled on the development machine
# with --target=cuda by `gpu_compare.py --compile-bundles` (scripts/gpu-deps runs it: the GPU
# machine has no compiler) and run here on both backends: a capture, module calls (the kernel
# suspends twice), a write with per-step saves, and stop().
GPU_PROGRAMS = {
    "capture": "trace { h = layers[2].output[-1].save() }",
    "logit-lens": "trace { l = lm_head(norm(layers[1].output[-1])).argmax().save() }",
    "steer-save": ("param alpha: f32 = 0.5\n"
                   "trace { for step in steps { layers[2].output += alpha\n"
                   "                           s = layers[3].output[-1].save() } }"),
    "probe-stop": "trace { p = layers[1].output.sum(dim=-1).save(); stop() }",
}
TINY = ("tiny", (64, 4, 4, 2, 96, 128))


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
    for name, dims in [TINY, ("small", (256, 6, 8, 4, 512, 1000))]:
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


def compile_bundles(nnsc, out):
    """Here, on the development machine: GPU_PROGRAMS as --target=cuda bundles for TINY."""
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        model = make_llama(os.path.join(work, TINY[0]), *TINY[1], torch.float32)
        for name, source in GPU_PROGRAMS.items():
            src = os.path.join(work, name + ".nns")
            with open(src, "w") as f:
                f.write(source + "\n")
            subprocess.run([nnsc, src, "-emit=bundle", "--target=cuda", "--model", model, "-o",
                            os.path.join(out, name + ".nnsb")], check=True)
    log(f"gpu bundles: {len(GPU_PROGRAMS)} compiled into {out}")


def compare_bundles(build, work, bundles):
    """Each bundle of compile_bundles on the CPU backend (host kernels) and the CUDA backend
    (device kernels through CudaBundleLauncher): tokens equal, saves within 1e-3."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "Runtime", "Backend"))
    from compare_saves import compare_dirs
    model = make_llama(os.path.join(work, "bundles-" + TINY[0]), *TINY[1], torch.float32)
    rng = random.Random(1)
    prompts = [{"ids": [rng.randrange(1, TINY[1][-1]) for _ in range(rng.randint(3, 30))]}
               for _ in range(6)]
    failed = 0
    for name in GPU_PROGRAMS:
        dirs = {}
        for device in ("cpu", "cuda"):
            dirs[device] = os.path.join(work, f"saves-{name}-{device}")
            nns_run(build, model, device, prompts,
                    ["--max-tokens", "6", "--bundle", os.path.join(bundles, name + ".nnsb"),
                     "--save-dir", dirs[device]])
        error, worst = compare_dirs(dirs["cpu"], dirs["cuda"], 1e-3)
        failed += error is not None
        log(f"{'FAIL' if error else 'PASS'} bundle {name} on cuda vs cpu: "
            f"{error or f'saves and tokens equal, max abs difference {worst:.2e}'}")
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
    ap.add_argument("--bundles", help="directory of compile_bundles' .nnsb files")
    ap.add_argument("--compile-bundles", metavar="OUT",
                    help="compile GPU_PROGRAMS with BUILD/bin/nnsc into OUT and exit")
    a = ap.parse_args()
    if a.compile_bundles:
        compile_bundles(os.path.join(a.build, "bin", "nnsc"), a.compile_bundles)
        return
    if not torch.cuda.is_available():
        sys.exit("gpu_compare.py: no CUDA device")
    with tempfile.TemporaryDirectory() as work:
        failed = compare(a.build, work)
        if a.bundles:
            failed += compare_bundles(a.build, work, a.bundles)
        if a.bench:
            measure(a.build, work)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

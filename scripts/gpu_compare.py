"""scripts/gpu-check's comparisons and measurements: nns-run on the CUDA backend against the
CPU backend on random Llama models written by transformers on this machine (no model files
travel to a GPU machine), then decode, prefill and throughput on a larger random Llama, with
transformers on the same GPU, model and dtype as the peer. A failing stage is reported and the
next one still runs.

usage: gpu_compare.py BUILD_DIR [--bench 0|1] [--bundles DIR]
       gpu_compare.py BUILD_DIR --compile-bundles OUT   (on the development machine)
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM

# bench/nnsrun.py owns the format of nns-run's statistics lines.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from nnsrun import parse_stats  # noqa: E402


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
# Compiled for WIDE (wide rows make heap copies large) and run by device_heap().
HEAP_PROGRAM = "trace { layers[2].skip(layers[1].output) }"
WIDE = ("wide", (1024, 3, 8, 8, 64, 128))
# (name, (hidden, layers, heads, kv_heads, intermediate, vocab), tied embeddings): the bundled
# SmolLM2's shapes (its GGUF is larger than what a call to the GPU machine carries).
COMPARED = [TINY + (False,), ("small", (256, 6, 8, 4, 512, 1000), False),
            ("smollm2-shaped", (576, 30, 9, 3, 1536, 49152), True)]


class RunFailed(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def make_llama(path, hidden, layers, heads, kv_heads, intermediate, vocab, dtype, tied=False):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, max_position_embeddings=4096,
                         tie_word_embeddings=tied, torch_dtype=dtype)
    LlamaForCausalLM(config).to(dtype).save_pretrained(path)
    return path


def make_bench_llama(work):
    """The measurements' model: a random 1.1B Llama (TinyLlama's shapes) in bf16."""
    return make_llama(os.path.join(work, "bench"), 2048, 16, 16, 8, 5632, 32000, torch.bfloat16)


def run_nns(build, model, device, prompts, extra, env=None):
    """nns-run over `prompts` (dicts of prompts.jsonl), with `env` added to the environment; the
    finished process, whatever its exit."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    cmd = [os.path.join(build, "bin", "nns-run"), "--model", model, "--device", device,
           "--prompts", f.name, "--json", "--temperature", "0"] + extra
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as e:
        raise RunFailed(f"{' '.join(cmd)} ran past 240 s:\n{(e.stderr or b'')[-3000:]}")
    finally:
        os.unlink(f.name)
    proc.command = " ".join(cmd)
    return proc


def nns_run(build, model, device, prompts, extra, env=None):
    proc = run_nns(build, model, device, prompts, extra, env)
    if proc.returncode != 0:
        raise RunFailed(f"{proc.command} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    ids = [json.loads(line)["ids"] for line in proc.stdout.splitlines()]
    stats = parse_stats(proc.stderr)  # ttft and decode are None when nothing was generated
    return ids, stats["generated"], stats["seconds"], stats["ttft"], stats["decode"]


def compare(build, work):
    failed = 0
    rng = random.Random(0)
    for name, dims, tied in COMPARED:
        model = make_llama(os.path.join(work, name), *dims, torch.float32, tied)
        vocab = dims[-1]
        prompts = [{"ids": [rng.randrange(1, vocab) for _ in range(rng.randint(3, 40))]}
                   for _ in range(8)]
        logits = {}
        tokens = {}
        try:
            for device in ("cpu", "cuda"):
                dump = os.path.join(work, f"{name}.{device}.safetensors")
                tokens[device] = nns_run(build, model, device, prompts,
                                         ["--max-tokens", "12", "--dump-logits", dump])[0]
                logits[device] = load_file(dump)
        except RunFailed as e:
            failed += 1
            log(f"FAIL {name} Llama {dims}: {e}")
            continue
        worst = max(float((logits["cpu"][k] - logits["cuda"][k]).abs().max()) for k in logits["cpu"])
        ok = tokens["cpu"] == tokens["cuda"] and worst <= 1e-3
        failed += not ok
        log(f"{'PASS' if ok else 'FAIL'} {name} Llama {dims}: 8 prompts x 12 tokens, tokens "
            f"{'equal' if tokens['cpu'] == tokens['cuda'] else 'DIFFER'}, max logit diff {worst:.2e}")
        if tokens["cpu"] != tokens["cuda"]:
            log(f"  cpu  {tokens['cpu']}\n  cuda {tokens['cuda']}")
    return failed


def compile_bundles(nnsc, out):
    """Here, on the development machine: GPU_PROGRAMS as --target=cuda bundles for TINY, and
    HEAP_PROGRAM for WIDE."""
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        tiny = make_llama(os.path.join(work, TINY[0]), *TINY[1], torch.float32)
        wide = make_llama(os.path.join(work, WIDE[0]), *WIDE[1], torch.float32)
        programs = [(name, source, tiny) for name, source in GPU_PROGRAMS.items()]
        programs.append(("device-heap", HEAP_PROGRAM, wide))
        for name, source, model in programs:
            src = os.path.join(work, name + ".nns")
            with open(src, "w") as f:
                f.write(source + "\n")
            subprocess.run([nnsc, src, "-emit=bundle", "--target=cuda", "--model", model, "-o",
                            os.path.join(out, name + ".nnsb")], check=True)
    log(f"gpu bundles: {len(programs)} compiled into {out}")


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
        try:
            for device in ("cpu", "cuda"):
                dirs[device] = os.path.join(work, f"saves-{name}-{device}")
                nns_run(build, model, device, prompts,
                        ["--max-tokens", "6", "--bundle", os.path.join(bundles, name + ".nnsb"),
                         "--save-dir", dirs[device]])
        except RunFailed as e:
            failed += 1
            log(f"FAIL bundle {name}: {e}")
            continue
        error, worst = compare_dirs(dirs["cpu"], dirs["cuda"], 1e-3)
        failed += error is not None
        log(f"{'FAIL' if error else 'PASS'} bundle {name} on cuda vs cpu: "
            f"{error or f'saves and tokens equal, max abs difference {worst:.2e}'}")
    return failed


def device_heap(build, work, bundles):
    """The device heap behind frame values of run-time shape (docs/BundleABI.md, "The frame").
    HEAP_PROGRAM keeps layer 1's output, [T, 1024] f32, for layer 2's skip: 4 KiB a prompt
    token, in the CUDA context's device heap, 8 MiB (cudaLimitMallocHeapSize's default).
    1. 48 requests of 200 tokens, 4 at a time: 800 KiB each, 38 MiB in all. They pass only if
       each finished request's copy is freed (by CudaBundleLauncher::freeFrameHeap).
    2. One 2200-token prompt (8.6 MiB, more than the heap) between two short ones: the long one
       fails with the kernel's "out of heap memory" error, the short ones finish."""
    path = os.path.join(bundles, "device-heap.nnsb")
    model = make_llama(os.path.join(work, WIDE[0]), *WIDE[1], torch.float32)
    vocab = WIDE[1][-1]
    rng = random.Random(2)
    prompts = [{"ids": [rng.randrange(1, vocab) for _ in range(200)]} for _ in range(48)]
    extra = ["--max-tokens", "2", "--bundle", path, "--max-num-seqs", "4",
             "--max-num-batched-tokens", "4096", "--max-model-len", "4096"]
    failed = 0
    try:
        tokens = {device: nns_run(build, model, device, prompts, extra)[0]
                  for device in ("cpu", "cuda")}
        ok = tokens["cpu"] == tokens["cuda"]
        log(f"{'PASS' if ok else 'FAIL'} device heap: 48 requests x 800 KiB of heap copies "
            f"through an 8 MiB heap, tokens {'equal' if ok else 'DIFFER'} on cuda and cpu")
        failed += not ok
    except RunFailed as e:
        failed += 1
        log(f"FAIL device heap, 48 requests: {e}")
    try:
        mixed = [prompts[0], {"ids": [rng.randrange(1, vocab) for _ in range(2200)]}, prompts[1]]
        proc = run_nns(build, model, "cuda", mixed, extra)
        records = [json.loads(line) for line in proc.stdout.splitlines()]
        errors = [line for line in proc.stderr.splitlines() if "nns-run: error: request" in line]
        ok = (proc.returncode == 1 and len(records) == 3 and len(errors) == 1
              and "request 1:" in errors[0] and "out of heap memory" in errors[0]
              and all(len(records[i]["ids"]) == 2 for i in (0, 2)))
        failed += not ok
        log(f"{'PASS' if ok else 'FAIL'} device heap, one 8.6 MiB copy: exit {proc.returncode}, "
            f"{errors or 'no request error'}")
        if not ok:
            log(proc.stderr[-3000:])
    except RunFailed as e:
        failed += 1
        log(f"FAIL device heap, one long prompt: {e}")
    return failed


def measure(build, work):
    """nns-run --device cuda and transformers on the same random 1.1B Llama in bf16, same GPU:
    batch-1 decode, a 2048-token prefill, and 64 requests of 32-256 prompt tokens generating 256
    tokens each (transformers batched, left padding: what a user would run)."""
    model = make_bench_llama(work)
    rng = random.Random(0)
    one = [{"ids": [rng.randrange(1, 32000) for _ in range(16)]}]
    long = [{"ids": [rng.randrange(1, 32000) for _ in range(2048)]} for _ in range(4)]
    work64 = [{"ids": [rng.randrange(1, 32000) for _ in range(rng.randint(32, 256))]}
              for _ in range(64)]
    bf16 = ["--ignore-eos", "--dtype", "bf16"]
    results = {}
    try:
        _, _, _, _, results["decode"] = nns_run(build, model, "cuda", one,
                                                ["--max-tokens", "256"] + bf16)
        # A process's first prefill also pays for loading the kernels of its shapes (CUDA's
        # lazy module loading, cuBLAS's heuristics): prefill is timed warm, as the difference
        # between four 2048-token prompts run one after another and one alone, one token each
        # (no decode step). Once with the bf16 tensor-core attention kernel, once without it.
        one_long = ["--max-tokens", "1", "--max-model-len", "4096", "--max-num-seqs", "1"] + bf16
        for key, env in [("prefill", None), ("prefill-simt", {"NNSC_CUDA_PREFILL": "simt"})]:
            _, _, alone, _, _ = nns_run(build, model, "cuda", long[:1], one_long, env)
            _, _, four, _, _ = nns_run(build, model, "cuda", long, one_long, env)
            results[key] = 3 * 2048 / (four - alone)
        _, n, secs, _, _ = nns_run(build, model, "cuda", work64, ["--max-tokens", "256"] + bf16)
        results["throughput"] = n / secs
    except RunFailed as e:
        log(f"FAIL measuring nns-run: {e}")
    peer = transformers_peer(model, one, long, work64)
    log("random Llama 1.1B (hidden 2048, 16 layers, GQA 16/8), bf16, same GPU:")
    log(f"  {'':28} {'nns-run':>10} {'transformers':>13} {'ratio':>6}")
    for key, label in [("decode", "batch-1 decode, tok/s"), ("prefill", "prefill 2048, tok/s"),
                       ("prefill-simt", "  the same, SIMT attention"),
                       ("throughput", "64 requests x 256, tok/s")]:
        ours, theirs = results.get(key), peer.get(key.split("-")[0])
        ratio = f"{ours / theirs:.2f}x" if ours and theirs else "-"
        log(f"  {label:28} {ours or float('nan'):10.1f} {theirs or float('nan'):13.1f} {ratio:>6}")


def transformers_peer(path, one, long, work64):
    """transformers' generate (greedy, its default attention: SDPA, bf16) on the same GPU."""
    out = {}
    try:
        model = LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16).cuda().eval()
        gen = lambda ids, n, **kw: model.generate(ids, max_new_tokens=n, min_new_tokens=n,
                                                 do_sample=False, pad_token_id=0, **kw)

        def timed(fn):
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            return time.perf_counter() - start

        ids = torch.tensor([one[0]["ids"]], device="cuda")
        gen(ids, 8)  # warm-up
        first = timed(lambda: gen(ids, 1))
        out["decode"] = 255 / (timed(lambda: gen(ids, 256)) - first)
        long_ids = torch.tensor([long[0]["ids"]], device="cuda")
        with torch.no_grad():
            model(long_ids)
            # One forward is 12-27 ms: the median of five, so one slow launch does not set it.
            out["prefill"] = 2048 / statistics.median(timed(lambda: model(long_ids))
                                                      for _ in range(5))
        width = max(len(p["ids"]) for p in work64)
        batch = torch.zeros(len(work64), width, dtype=torch.long)
        mask = torch.zeros(len(work64), width, dtype=torch.long)
        for i, p in enumerate(work64):
            batch[i, width - len(p["ids"]):] = torch.tensor(p["ids"])
            mask[i, width - len(p["ids"]):] = 1
        out["throughput"] = len(work64) * 256 / timed(
            lambda: gen(batch.cuda(), 256, attention_mask=mask.cuda()))
    except Exception as e:  # the peer is a measurement, not a check: report and go on
        log(f"transformers peer failed: {type(e).__name__}: {e}")
    return out


def profile(build, work):
    """GPU time per kernel (ncu, one metric: no replays of whole passes) of one 2048-token
    prefill and of 16 decode steps on measure()'s 1.1B Llama in bf16, against nns-run's own
    rates without the profiler: what the kernels cost and what the host adds around them."""
    model = make_bench_llama(work)
    rng = random.Random(0)
    cases = [("prefill, one 2048-token prompt", [rng.randrange(1, 32000) for _ in range(2048)],
              1, None),
             ("decode, 16 steps after a 16-token prompt", [rng.randrange(1, 32000)
                                                           for _ in range(16)], 17, 16)]
    for label, ids, tokens, steps in cases:
        extra = ["--max-tokens", str(tokens), "--max-model-len", "4096", "--ignore-eos",
                 "--dtype", "bf16"]
        _, _, secs, ttft, decode = nns_run(build, model, "cuda", [{"ids": ids}], extra)
        log(f"{label}: nns-run {secs:.4f} s, first token {ttft:.4f} s"
            + (f", then {decode:.1f} tok/s" if decode else ""))
        report, prompts = os.path.join(work, "ncu.csv"), os.path.join(work, "profile.jsonl")
        with open(prompts, "w") as f:
            f.write(json.dumps({"ids": ids}) + "\n")
        cmd = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
               "--page", "raw", "--log-file", report, os.path.join(build, "bin", "nns-run"),
               "--model", model, "--device", "cuda", "--prompts", prompts, "--temperature", "0"]
        try:
            proc = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=400)
        except FileNotFoundError:
            log("ncu is not on the PATH: no GPU time per kernel")
            return
        if proc.returncode != 0 or not os.path.exists(report):
            log(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")
            continue
        with open(report) as f:
            lines = [l for l in f if not l.startswith("==")]
        by_kernel = {}
        for row in csv.DictReader(lines):
            value = row.get("gpu__time_duration.sum", "")
            if not row.get("ID") or not value.replace(".", "").replace(",", "").isdigit():
                continue  # the units row
            name = row["Kernel Name"][:100]
            count, total = by_kernel.get(name, (0, 0.0))
            by_kernel[name] = (count + 1, total + float(value.replace(",", "")))
        total_ns = sum(t for _, t in by_kernel.values())
        launches = sum(c for c, _ in by_kernel.values())
        per = f", per step {total_ns / steps / 1e3:.1f} us in {launches / steps:.0f} launches" \
            if steps else ""
        log(f"  GPU time of every kernel: {total_ns / 1e6:.2f} ms in {launches} launches{per}")
        for name, (count, ns) in sorted(by_kernel.items(), key=lambda kv: -kv[1][1])[:14]:
            log(f"  {ns / 1e6:9.3f} ms {100 * ns / total_ns:5.1f}% {count:6d}x  {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--bench", type=int, default=1)
    ap.add_argument("--bundles", help="directory of compile_bundles' .nnsb files")
    ap.add_argument("--profile", action="store_true",
                    help="only the GPU time per kernel of a prefill and of decode steps (ncu)")
    ap.add_argument("--compile-bundles", metavar="OUT",
                    help="compile GPU_PROGRAMS with BUILD/bin/nnsc into OUT and exit")
    a = ap.parse_args()
    if a.compile_bundles:
        compile_bundles(os.path.join(a.build, "bin", "nnsc"), a.compile_bundles)
        return
    if not torch.cuda.is_available():
        sys.exit("gpu_compare.py: no CUDA device")
    with tempfile.TemporaryDirectory() as work:
        if a.profile:
            profile(a.build, work)
            return
        start = time.time()
        failed = compare(a.build, work)
        log(f"({time.time() - start:.0f} s)")
        if a.bundles:
            failed += compare_bundles(a.build, work, a.bundles)
            failed += device_heap(a.build, work, a.bundles)
            log(f"({time.time() - start:.0f} s)")
        if a.bench:
            measure(a.build, work)
            log(f"({time.time() - start:.0f} s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""Intervention benchmarks: what an experiment costs inside the engine, and against NNsight.

For each experiment (none, steering one layer, last-token capture of one layer, capture of every
layer) the same 200 requests run through `nns-run --bundle` (bundle compiled once, before timing)
and through nnsight 0.8.1 on transformers with the same weights, two ways: one prompt per trace,
as many scripts do, and batched (`lm.generate(list_of_prompts)` with left padding, batch sizes
of --nnsight-batch), as a researcher with many prompts writes it; the engine's speedup is given
against each. Both sides get the same token ids, generate the same number of tokens greedily
(EOS ignored) and return the same saves; the generated tokens of both sides are compared, so a
fast wrong answer cannot pass as a speedup.

usage: .venv/bin/python bench/intervention_bench.py [--build DIR] [--model GGUF]
           [--prompts N] [--nnsight-prompts N] [--nnsight-batch B,B] [--max-tokens N]
           [--skip-nnsight] [--repeat R] [--experiments "NAME;NAME"]

Whole-workload efficiency: each side's achieved GFLOP/s on the workload (its useful work:
workload_flops) against the best GEMM rate of this machine, measured in the same run by
`nnsc-bench-gemm` (the highest cell of its fp32 and of its bf16 table, nnsc::linear or
at::linear, any shape and row count; best of a probe before the engine rounds and one after).

--experiments picks experiments by name (default: the first four). The attention-pattern
experiments bind `self_attn.pattern` (the bound layers leave the fused attention kernel for
the materialized path) and run engine-only (with --skip-nnsight).

Engine time is the time nns-run reports for serving the requests (model loading and bundle
compilation excluded); NNsight time is the wall time of its traces (model loading excluded).
Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import functools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from model_bench import parameter_count
from nnsrun import ROOT, log, nns_run, print_table

HIDDEN, LAYERS = 576, 30

# name -> (trace source or None for plain requests, needs the steering param)
EXPERIMENTS = {
    "none": (None, False),
    "steering, layer 12": (
        "param steer: f32[hidden]\n"
        "trace { for step in steps { layers[12].output += 4.0 * steer } }\n", True),
    "last-token capture, layer 8": (
        "trace { for step in steps { h = layers[8].output[-1].save() } }\n", False),
    "capture of every layer": (
        "trace { for step in steps { cache(layers[*].output) } }\n", False),
    # Head 0's attention of the last query to position 0, read from the pattern every step.
    "pattern read, layer 12": (
        "trace { for step in steps { s = layers[12].self_attn.pattern[0, -1, 0].save() } }\n",
        False),
    "pattern read, every layer": (
        "trace { for step in steps { for i in 0..30 {\n"
        "  s = layers[i].self_attn.pattern[0, -1, 0].save() } } }\n", False),
}
DEFAULT_EXPERIMENTS = ["none", "steering, layer 12", "last-token capture, layer 8",
                       "capture of every layer"]


@functools.lru_cache(maxsize=None)
def model_sizes(model):
    """(parameters of everything but the tied embedding, parameters of the embedding)."""
    import gguf
    embedding = next(int(t.n_elements) for t in gguf.GGUFReader(model).tensors
                     if t.name == "token_embd.weight")
    return parameter_count(model) - embedding, embedding


def workload_flops(model, requests, max_tokens):
    """The useful work of the requests, in FLOPs: every computed token (each prompt token and
    each generated one but the last) through the layers' projections, 2 x their parameters
    (every tensor but the tied embedding); the lm_head, 2 x vocab x hidden, for the rows whose
    logits are sampled (one per generated token); attention, 4 x layers x hidden x context per
    computed token (scores and weighted values of every head). The same count for every
    engine: what the workload needs, not what an engine happens to compute."""
    layer_params, embedding = model_sizes(model)
    flops = 0.0
    for ids in requests:
        computed = len(ids) + max_tokens - 1
        flops += 2.0 * layer_params * computed + 2.0 * embedding * max_tokens
        flops += 4.0 * LAYERS * HIDDEN * computed * (computed + 1) / 2
    return flops


def best_gemm_rates(build):
    """The best GFLOP/s of any cell of `nnsc-bench-gemm`'s fp32 and bf16 tables (nnsc::linear
    or at::linear, the model's projection shapes, 1-512 rows, 2 threads)."""
    log("GEMM probe: nnsc-bench-gemm --threads 2 --repeat 3")
    out = subprocess.run([os.path.join(build, "bin", "nnsc-bench-gemm"), "--threads", "2",
                          "--repeat", "3"], check=True, capture_output=True, text=True).stdout
    best = {"fp32": 0.0, "bf16": 0.0}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) == 7 and cells[0] in best:
            best[cells[0]] = max(best[cells[0]], float(cells[4]), float(cells[5]))
    return best


def compile_bundles(build, model, workdir, names):
    bundles = {}
    for name in names:
        source = EXPERIMENTS[name][0]
        if source is None:
            continue
        stem = os.path.join(workdir, "exp%d" % len(bundles))
        with open(stem + ".nns", "w") as f:
            f.write(source)
        subprocess.run([os.path.join(build, "bin", "nnsc"), stem + ".nns", "--model", model,
                        "-emit=bundle", "-o", stem + ".nnsb"], check=True)
        bundles[name] = stem + ".nnsb"
    return bundles


def steering_vector(workdir):
    import torch
    from safetensors.torch import save_file
    gen = torch.Generator().manual_seed(0)
    steer = torch.randn(HIDDEN, generator=gen)
    path = os.path.join(workdir, "steer.safetensors")
    save_file({"steer": steer}, path)
    return steer, path


def run_engine(build, model, requests, max_tokens, bundle, steer_file, workdir):
    """Engine seconds (nns-run's own statistics line) and the generated ids per request."""
    extra = ["--max-tokens", str(max_tokens)]
    if bundle:
        extra += ["--bundle", bundle, "--save-dir", os.path.join(workdir, "saves")]
    if steer_file:
        extra += ["--param", "steer=@%s:steer" % steer_file]
    r = nns_run(build, model, [{"ids": ids} for ids in requests], extra, quiet=True)
    return r["seconds"], r["ids"]


def nnsight_experiment(lm, name, ids, max_tokens, steer):
    """One prompt through nnsight, written as a researcher would; returns the generated ids."""
    import torch
    layers = lm.model.layers
    kwargs = dict(max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False,
                  pad_token_id=0)
    with torch.no_grad(), lm.generate([ids], **kwargs) as tracer:
        if name == "steering, layer 12":
            for _ in tracer.iter[0:max_tokens]:
                layers[12].output[:] += 4.0 * steer
        elif name == "last-token capture, layer 8":
            saves = list().save()
            for _ in tracer.iter[0:max_tokens]:
                saves.append(layers[8].output[0, -1])
        elif name == "capture of every layer":
            saves = list().save()
            for _ in tracer.iter[0:max_tokens]:
                for i in range(LAYERS):
                    saves.append(layers[i].output[0])
        result = tracer.result.save()
    return result[0, len(ids):].tolist()


def nnsight_batch(lm, name, batch, max_tokens, steer):
    """A batch of prompts through one nnsight generate (left padding); returns the generated
    ids of each."""
    import torch
    layers = lm.model.layers
    kwargs = dict(max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False,
                  pad_token_id=0)
    with torch.no_grad(), lm.generate(batch, **kwargs) as tracer:
        if name == "steering, layer 12":
            for _ in tracer.iter[0:max_tokens]:
                layers[12].output[:] += 4.0 * steer
        elif name == "last-token capture, layer 8":
            saves = list().save()
            for _ in tracer.iter[0:max_tokens]:
                saves.append(layers[8].output[:, -1])
        elif name == "capture of every layer":
            saves = list().save()
            for _ in tracer.iter[0:max_tokens]:
                for i in range(LAYERS):
                    saves.append(layers[i].output)
        result = tracer.result.save()
    width = result.shape[1] - max_tokens
    return [row[width:].tolist() for row in result]


def run_nnsight_batched(lm, name, requests, max_tokens, steer, size):
    start = time.time()
    outputs = []
    for first in range(0, len(requests), size):
        log("  nnsight %s, batches of %d: prompt %d/%d" % (name, size, first + 1, len(requests)))
        outputs += nnsight_batch(lm, name, requests[first:first + size], max_tokens, steer)
    return time.time() - start, outputs


def run_nnsight(lm, name, requests, max_tokens, steer):
    start = time.time()
    outputs = []
    for i, ids in enumerate(requests):
        if i % 20 == 0:
            log("  nnsight %s: prompt %d/%d" % (name, i + 1, len(requests)))
        outputs.append(nnsight_experiment(lm, name, ids, max_tokens, steer))
    return time.time() - start, outputs


def explain_divergence(build, model, hf, requests, engine_out, hf_out, max_tokens, workdir):
    """For each plain continuation that differs: the first differing step and the gap between
    the two best logits there, in the engine (nns-run --dump-logits) and in transformers (a
    forward over the prompt and the tokens both sides agreed on). Returns table rows."""
    import torch
    from safetensors.torch import load_file
    rows = []
    for i, (ours, theirs) in enumerate(zip(engine_out, hf_out)):
        if ours == theirs:
            continue
        step = next(k for k, (x, y) in enumerate(zip(ours, theirs)) if x != y)
        dump = os.path.join(workdir, "logits%d.safetensors" % i)
        subprocess.run([os.path.join(build, "bin", "nns-run"), "--model", model, "--prompt-ids",
                        ",".join(map(str, requests[i])), "--temperature", "0", "--ignore-eos",
                        "--max-tokens", str(max_tokens), "--dump-logits", dump, "--quiet",
                        "--json"], check=True, capture_output=True)
        ours_logits = load_file(dump)["logits.0"][step].double()
        with torch.no_grad():
            ids = torch.tensor([requests[i] + theirs[:step]])
            hf_logits = hf(ids).logits[0, -1].double()
        def gap(logits, a, b):
            return float(logits[a] - logits[b])
        x, y = ours[step], theirs[step]
        rows.append([str(i), str(step), "%d vs %d" % (x, y),
                     "%.4f" % gap(ours_logits, x, y), "%.4f" % gap(hf_logits, y, x),
                     "%.4f" % float((ours_logits - hf_logits).abs().max())])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--nnsight-prompts", type=int, default=200,
                    help="how many of the prompts also run through nnsight")
    ap.add_argument("--nnsight-batch", default="16,64",
                    help="batch sizes of the batched nnsight baseline (empty: none)")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=6,
                    help="rounds; each runs every experiment once, back to back; an overhead "
                         "is the median over rounds of the round's ratio to 'none'")
    ap.add_argument("--skip-nnsight", action="store_true")
    ap.add_argument("--experiments", default=";".join(DEFAULT_EXPERIMENTS),
                    help="';'-separated experiment names; 'none' is always run")
    a = ap.parse_args()
    names = ["none"] + [n for n in a.experiments.split(";") if n and n != "none"]
    for name in names:
        if name not in EXPERIMENTS:
            sys.exit("unknown experiment '%s'; known: %s" % (name, "; ".join(EXPERIMENTS)))
    if not a.skip_nnsight and any(n.startswith("pattern") for n in names):
        sys.exit("the attention-pattern experiments run engine-only: add --skip-nnsight")

    rng = random.Random(0)
    requests = [[rng.randrange(1, 49152) for _ in range(rng.randint(16, 64))]
                for _ in range(a.prompts)]
    workdir = tempfile.mkdtemp(prefix="nnsc-bench-")
    gemm_probes = [best_gemm_rates(a.build)]
    log("compiling the experiments' bundles")
    bundles = compile_bundles(a.build, a.model, workdir, names)
    steer, steer_file = steering_vector(workdir)

    # A round runs 'none' and every experiment back to back, in an order rotated per round so
    # no experiment always runs first; the machine's drift between rounds then cancels in the
    # per-round ratio against that round's 'none'.
    engine = {name: [] for name in names}
    tokens = {}
    for r in range(a.repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            log("engine, round %d/%d: %s, %d prompts" % (r + 1, a.repeat, name, a.prompts))
            seconds, out = run_engine(a.build, a.model, requests, a.max_tokens,
                                      bundles.get(name),
                                      steer_file if EXPERIMENTS[name][1] else None, workdir)
            engine[name].append(seconds)
            tokens[name] = out
    median = {name: statistics.median(t) for name, t in engine.items()}
    gemm_probes.append(best_gemm_rates(a.build))
    best_gemm = {dtype: max(p[dtype] for p in gemm_probes) for dtype in ("fp32", "bf16")}
    work = workload_flops(a.model, requests, a.max_tokens)
    efficiency = [[name, "%.0f" % (work / median[name] / 1e9),
                   "%.0f%%" % (100 * work / median[name] / 1e9 / best_gemm["fp32"])]
                  for name in names]

    rows = []
    for name in names:
        times = "%.2f s (%s)" % (median[name], ", ".join("%.2f" % t for t in engine[name]))
        if name == "none":
            rows.append([name, times, "-", "-"])
            continue
        ratios = sorted(100 * (t / n - 1) for t, n in zip(engine[name], engine["none"]))
        rows.append([name, times, "%+.1f%%" % statistics.median(ratios),
                     "%+.1f%% .. %+.1f%%" % (ratios[0], ratios[-1])])

    if not a.skip_nnsight:
        sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
        import torch
        from nnsight import LanguageModel
        from reference import load_gguf_reference
        torch.set_num_threads(2)
        log("nnsight: loading the same GGUF through transformers")
        hf, tok = load_gguf_reference(a.model)
        tok.padding_side = "left"
        lm = LanguageModel(hf, tokenizer=tok)
        n = min(a.nnsight_prompts, a.prompts)
        sizes = [int(s) for s in a.nnsight_batch.split(",") if s]
        for row, name in zip(rows, names):
            seconds, out = run_nnsight(lm, name, requests[:n], a.max_tokens, steer)
            same = sum(x == y for x, y in zip(out, tokens[name][:n]))
            if name == "none":
                diverging = explain_divergence(a.build, a.model, hf, requests[:n],
                                               tokens[name][:n], out, a.max_tokens, workdir)
            # Scale the engine's time to the prompts nnsight ran when it ran fewer.
            ours = median[name] * n / a.prompts
            row += ["%.1f s" % seconds, "%.1fx" % (seconds / ours), "%d/%d" % (same, n)]
            theirs = workload_flops(a.model, requests[:n], a.max_tokens)
            for size in sizes:
                seconds, out = run_nnsight_batched(lm, name, requests[:n], a.max_tokens, steer,
                                                   size)
                same = sum(x == y for x, y in zip(out, tokens[name][:n]))
                row += ["%.1f s" % seconds, "%.1fx" % (seconds / ours), "%d/%d" % (same, n)]
                if size == max(sizes):
                    effic = next(e for e in efficiency if e[0] == name)
                    effic += ["%.0f" % (theirs / seconds / 1e9),
                              "%.0f%%" % (100 * theirs / seconds / 1e9 / best_gemm["fp32"])]

    header = ["experiment (%d prompts x %d tokens)" % (a.prompts, a.max_tokens),
              "nns-run, median of %d" % a.repeat, "overhead vs none (median of rounds)",
              "per-round range"]
    if not a.skip_nnsight:
        header += ["nnsight 0.8.1, one prompt per trace", "speedup", "greedy tokens equal"]
        for size in [int(s) for s in a.nnsight_batch.split(",") if s]:
            header += ["nnsight batched by %d" % size, "speedup", "greedy tokens equal"]
    print_table(header, rows)
    print("\nWhole-workload efficiency: the workload's useful work (%.1f GFLOP for the %d "
          "prompts) over each side's time, against the best GEMM rate measured in this run "
          "(nnsc-bench-gemm, 2 threads: fp32 %.0f GFLOP/s, bf16 %.0f GFLOP/s; probes %s).\n"
          % (work / 1e9, a.prompts, best_gemm["fp32"], best_gemm["bf16"],
             ", ".join("%.0f/%.0f" % (p["fp32"], p["bf16"]) for p in gemm_probes)))
    header = ["experiment", "nns-run GFLOP/s (fp32)", "of the best fp32 GEMM"]
    if not a.skip_nnsight and sizes:
        header += ["nnsight batched by %d GFLOP/s" % max(sizes), "of the best fp32 GEMM"]
    print_table(header, efficiency)
    if not a.skip_nnsight and diverging:
        print("\nPlain continuations that differ from transformers: first differing step, "
              "the two tokens (engine vs transformers), each side's logit margin of its own "
              "token over the other's, and the largest logit difference at that step.\n")
        print("| prompt | step | tokens | engine margin | transformers margin | max abs logit diff |")
        print("|---|---|---|---|---|---|")
        for row in diverging:
            print("| " + " | ".join(row) + " |")
    print("\nload average during the run: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()

"""Logit lens benchmark: the lens of every layer at the last token, in the engine and in NNsight.

The program reads each layer's output at the prompt's last token through the final norm and
lm_head and keeps the top token per layer (30 layers of SmolLM2-135M):

    trace { for i in 0..30 { lens = lm_head(norm(layers[i].output[-1])).argmax().save() } }

The same N prompts (random token ids, 16-64 tokens) run through `nns-run --bundle` (one
forward pass per prompt: --max-tokens 1; bundle compiled once, before timing) and through
nnsight 0.8.1 on transformers with the same weights (the GGUF dequantized, fp32), written the
strongest way a user would: one `lm.trace` over all N prompts (left padding), the lens of each
layer on the batch's last positions. Both sides use the same threads. The top tokens of both
sides are compared per prompt and layer, so a fast wrong answer cannot pass as a speedup
(a few may differ where two logits are within the engines' rounding of each other).

Engine time is the time nns-run reports for serving the requests (model loading and bundle
compilation excluded), with and without the lens (the plain forward pass, for the lens's own
cost); NNsight time is the wall time of its trace (model loading excluded, one warm-up trace
first). Each is the median of --repeat rounds.

usage: .venv/bin/python bench/logit_lens_bench.py [--build DIR] [--model GGUF]
           [--prompts N,N] [--repeat R] [--threads T] [--skip-nnsight]
Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from nnsrun import ROOT, log, nns_run, print_load_average, print_table

LAYERS = 30
PROGRAM = ("trace { for i in 0..%d { lens = lm_head(norm(layers[i].output[-1])).argmax().save() "
           "} }\n" % LAYERS)


def requests_of(count):
    rng = random.Random(0)
    return [[rng.randrange(1, 49152) for _ in range(rng.randint(16, 64))] for _ in range(count)]


def run_engine(build, model, requests, bundle, threads, workdir):
    """nns-run's serving seconds and, with the bundle, each request's top token per layer."""
    extra = ["--max-tokens", "1", "--threads", str(threads)]
    saves = os.path.join(workdir, "saves")
    if bundle:
        extra += ["--bundle", bundle, "--save-dir", saves]
    r = nns_run(build, model, [{"ids": ids} for ids in requests], extra, quiet=True)
    if not bundle:
        return r["seconds"], None
    from safetensors.torch import load_file
    tops = []
    for i in range(len(requests)):
        kept = load_file(os.path.join(saves, "%d.safetensors" % i))
        tops.append([int(kept["lens.%d" % layer]) for layer in range(LAYERS)])
    return r["seconds"], tops


def nnsight_lens(lm, requests):
    """One trace over every prompt; each prompt's top token per layer."""
    import torch
    layers = lm.model.layers
    with torch.no_grad(), lm.trace(requests):
        tops = list().save()
        for i in range(LAYERS):
            tops.append(lm.lm_head(lm.model.norm(layers[i].output[:, -1])).argmax(-1))
    by_layer = [t.tolist() for t in tops]
    return [[by_layer[layer][p] for layer in range(LAYERS)] for p in range(len(requests))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--prompts", default="32", help="comma list of prompt counts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-nnsight", action="store_true")
    a = ap.parse_args()
    counts = [int(c) for c in a.prompts.split(",") if c]

    workdir = tempfile.mkdtemp(prefix="nnsc-lens-")
    source = os.path.join(workdir, "lens.nns")
    with open(source, "w") as f:
        f.write(PROGRAM)
    bundle = os.path.join(workdir, "lens.nnsb")
    subprocess.run([os.path.join(a.build, "bin", "nnsc"), source, "--model", a.model,
                    "-emit=bundle", "-o", bundle], check=True)

    lm = None
    if not a.skip_nnsight:
        sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
        import torch
        from nnsight import LanguageModel
        from reference import load_gguf_reference
        torch.set_num_threads(a.threads)
        log("nnsight: loading the same GGUF through transformers")
        hf, tok = load_gguf_reference(a.model)
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        lm = LanguageModel(hf, tokenizer=tok)

    header = ["prompts", "nns-run lens, median of %d" % a.repeat, "nns-run plain forward",
              "lens cost"]
    if lm:
        header += ["nnsight 0.8.1, one batched trace", "speedup", "top tokens equal"]
    rows = []
    for count in counts:
        requests = requests_of(count)
        lens, plain, theirs = [], [], []
        for r in range(a.repeat):
            log("round %d/%d, %d prompts: engine with the lens" % (r + 1, a.repeat, count))
            seconds, ours = run_engine(a.build, a.model, requests, bundle, a.threads, workdir)
            lens.append(seconds)
            log("round %d/%d, %d prompts: engine, plain" % (r + 1, a.repeat, count))
            plain.append(run_engine(a.build, a.model, requests, None, a.threads, workdir)[0])
            if lm:
                if r == 0:
                    nnsight_lens(lm, requests)  # warm-up
                log("round %d/%d, %d prompts: nnsight" % (r + 1, a.repeat, count))
                start = time.time()
                tops = nnsight_lens(lm, requests)
                theirs.append(time.time() - start)
        ours_s, plain_s = statistics.median(lens), statistics.median(plain)
        row = [str(count), "%.2f s (%s)" % (ours_s, ", ".join("%.2f" % t for t in lens)),
               "%.2f s" % plain_s, "%.2f s" % (ours_s - plain_s)]
        if lm:
            theirs_s = statistics.median(theirs)
            same = sum(x == y for p, q in zip(ours, tops) for x, y in zip(p, q))
            row += ["%.2f s (%s)" % (theirs_s, ", ".join("%.2f" % t for t in theirs)),
                    "%.2fx" % (theirs_s / ours_s), "%d/%d" % (same, count * LAYERS)]
        rows.append(row)

    print_table(header, rows)
    print_load_average()


if __name__ == "__main__":
    main()

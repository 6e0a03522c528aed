"""NNsight code through nnsc.LanguageModel against the same program as .nns and against nnsight.

Three experiments, written once as NNsight 0.8.1 code (the functions below run unchanged on
both models): steering (layer 12's output plus a vector at every step, 16 tokens), the logit
lens at every layer (the last token's top token through the final norm and lm_head, prompt
pass only) and attention knockout (head 7 of layers 0-9: the last position attends to itself
only, at every step, 16 tokens). Each runs over N prompts (varied text, 5-40 words, built
deterministically) three ways in the same run:

  (a) the NNsight code through `nnsc.LanguageModel`: a first call (tracing, emission,
      compilation) and a second call of the same `with` block (the cache per code location:
      traced again, plans and program reused, params and prompts rebound);
  (b) the same program written as `.nns` through `nnsc.LLM.generate` (compiled before timing);
  (c) the NNsight code through nnsight 0.8.1 on transformers with the same weights (the GGUF
      dequantized, as the parity harness loads it), batched: one trace per --nnsight-batch
      prompts, left padding, eager attention for the knockout (nnsight's `.source` path needs
      it), on the first --nnsight-prompts prompts; its time is scaled to N prompts when fewer.

fp32 and the same threads everywhere. Generation ignores the end-of-sequence token
(`min_new_tokens=16`), so every side makes every token. The generated tokens of (a) and (b),
and the lens's top tokens, must be equal; those of (c) are counted (nnsight pads the batch, so
a few may differ).

usage: .venv/bin/python bench/nnsight_code.py [--prompts 32,256] [--repeat 3,1]
           [--nnsight-prompts 32] [--nnsight-batch 32] [--threads 2]
           [--experiments steering,lens,knockout] [--skip-nnsight]

(a) and (b) alternate, --repeat rounds per prompt count after (a)'s first call, medians shown.
Progress goes to stderr; the results table (Markdown) to stdout.
"""

import argparse
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))

from nnsrun import log, print_load_average, print_table  # noqa: E402

TOKENS = 16
WORDS = ("the a of and to in is was that for on with as at by from river city house garden "
         "green old quickly slowly ran said found over under light time market king queen "
         "children music history science water mountain letter window morning evening "
         "travelled remembered bright quiet small large").split()


def prompts_of(count):
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))).capitalize()
            for _ in range(count)]


# --- the experiments as NNsight code: the same functions run on nnsc and on nnsight ------------

def steering(model, prompts, steer):
    import torch
    with torch.no_grad(), model.generate(prompts, max_new_tokens=TOKENS, min_new_tokens=TOKENS,
                                         do_sample=False, pad_token_id=0) as tracer:
        for step in tracer.iter[0:TOKENS]:
            model.model.layers[12].output[:] += 4.0 * steer
        result = tracer.result.save()
    return result


def lens(model, prompts, steer):
    import torch
    tops = []
    with torch.no_grad(), model.trace(prompts):
        for layer in model.model.layers:
            tops.append(model.lm_head(model.model.norm(layer.output[:, -1])).argmax(-1).save())
    return torch.stack(tops, 1)  # [prompts, layers]


def knockout(model, prompts, steer):
    import torch
    with torch.no_grad(), model.generate(prompts, max_new_tokens=TOKENS, min_new_tokens=TOKENS,
                                         do_sample=False, pad_token_id=0) as tracer:
        for step in tracer.iter[0:TOKENS]:
            for i in range(10):
                attention = model.model.layers[i].self_attn.source.attention_interface_1
                attention.source.nn_functional_softmax_0.output[:, 7, -1, :-1] = 0
        result = tracer.result.save()
    return result


# --- the same programs as .nns ---------------------------------------------------------------

NNS = {
    "steering": ("param steer: f32[576]\n"
                 "trace { for step in steps[0:%d] { model.layers.12.output += steer } }\n"
                 % TOKENS),
    "lens": ("trace { for i in 0..30 { "
             "lens = lm_head(norm(layers[i].output[-1])).argmax().save() } }\n"),
    "knockout": ("trace { for step in steps[0:%d] { for i in 0..10 { "
                 "layers[i].self_attn.pattern[7, -1, :-1] = 0 } } }\n" % TOKENS),
}
EXPERIMENTS = {"steering": steering, "lens": lens, "knockout": knockout}
TITLES = {"steering": "steering layer 12, every step, %d tokens" % TOKENS,
          "lens": "logit lens, every layer (prompt pass)",
          "knockout": "attention knockout, layers 0-9 head 7, every step, %d tokens" % TOKENS}


def run_nns(llm, program, prompts, name, steer):
    """(b): the .nns program through nnsc.LLM.generate; the comparable output of (a)."""
    import torch
    results = llm.generate(prompts, program, {"steer": 4.0 * steer} if name == "steering"
                           else None, max_tokens=0 if name == "lens" else TOKENS,
                           temperature=0, ignore_eos=True, use_tqdm=False)
    if name == "lens":
        return torch.stack([torch.stack([r.saves["lens.%d" % i].reshape(()) for i in range(30)])
                            for r in results])
    return [r.outputs[0].token_ids for r in results]


def generated(name, out):
    """The generated tokens per prompt of a [B, prompt + 16] result (or the lens's tops)."""
    if name == "lens":
        return out
    return [row[-TOKENS:].tolist() for row in out]


def equal(name, ours, theirs):
    if name == "lens":
        return int((ours == theirs).sum()), ours.numel()
    return sum(x == y for x, y in zip(ours, theirs)), len(ours)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", default="32,256", help="comma list of prompt counts")
    ap.add_argument("--nnsight-prompts", type=int, default=32)
    ap.add_argument("--nnsight-batch", type=int, default=32)
    ap.add_argument("--repeat", default="3,1",
                    help="rounds of (b) then (a) again per prompt count (a comma list); the "
                         "medians are shown")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--experiments", default="steering,lens,knockout")
    ap.add_argument("--skip-nnsight", action="store_true")
    a = ap.parse_args()
    counts = [int(c) for c in a.prompts.split(",") if c]
    repeats = [int(r) for r in a.repeat.split(",") if r]
    repeats += repeats[-1:] * (len(counts) - len(repeats))
    names = [n for n in a.experiments.split(",") if n]

    import nnsc
    import torch
    torch.set_num_threads(a.threads)
    log("nnsc: loading the bundled model, %d threads" % a.threads)
    llm = nnsc.LLM(threads=a.threads)
    model = nnsc.LanguageModel(llm)
    steer = torch.randn(576, generator=torch.Generator().manual_seed(0))
    steer = 8.0 * steer / steer.norm()
    programs = {name: llm.compile(NNS[name]) for name in names}

    lm = None
    if not a.skip_nnsight:
        import warnings
        from nnsight import LanguageModel
        from reference import load_gguf_reference
        log("nnsight: loading the same GGUF through transformers")
        hf, tok = load_gguf_reference(os.path.join(ROOT, "models",
                                                   "SmolLM2-135M-Instruct.Q4_1.gguf"))
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lm = LanguageModel(hf, tokenizer=tok)
        torch.set_num_threads(a.threads)

    header = ["experiment", "prompts", "(a) NNsight code, nnsc, first call",
              "(a) again (cached), median", "(b) .nns, nnsc.LLM, median", "(a)/(b)",
              "(a) = (b)"]
    if lm:
        header += ["(c) nnsight 0.8.1 batched", "(c)/(a)", "(c) = (a)"]
    rows = []
    nnsight_runs = {}  # experiment -> (prompts, seconds) of its nnsight run
    for count, repeat in zip(counts, repeats):
        prompts = prompts_of(count)
        for name in names:
            code = EXPERIMENTS[name]
            log("%s, %d prompts: (a) NNsight code, first call" % (name, count))
            start = time.perf_counter()
            code(model, prompts, steer)
            first = time.perf_counter() - start
            ours_times, nns_times = [], []
            for r in range(repeat):
                log("%s, %d prompts, round %d/%d: (b) .nns through nnsc.LLM.generate"
                    % (name, count, r + 1, repeat))
                start = time.perf_counter()
                theirs = run_nns(llm, programs[name], prompts, name, steer)
                nns_times.append(time.perf_counter() - start)
                log("%s, %d prompts, round %d/%d: (a) NNsight code, again"
                    % (name, count, r + 1, repeat))
                start = time.perf_counter()
                ours = generated(name, code(model, prompts, steer))
                ours_times.append(time.perf_counter() - start)
                log("  (a) %.2f s, (b) %.2f s" % (ours_times[-1], nns_times[-1]))
            second, nns_s = statistics.median(ours_times), statistics.median(nns_times)
            same, total = equal(name, ours, theirs)
            row = [TITLES[name], str(count), "%.2f s" % first,
                   "%.2f s (%s)" % (second, ", ".join("%.2f" % t for t in ours_times)),
                   "%.2f s (%s)" % (nns_s, ", ".join("%.2f" % t for t in nns_times)),
                   "%.3f" % (second / nns_s), "%d/%d" % (same, total)]
            if lm:
                n = min(a.nnsight_prompts, count)
                if name not in nnsight_runs or nnsight_runs[name][0] != n:
                    nnsight_s, outs = run_nnsight(lm, code, name, prompts[:n], steer,
                                                  a.nnsight_batch)
                    nnsight_runs[name] = (n, nnsight_s)
                    same_c, total_c = equal(name, ours[:n], outs)
                    agree = "%d/%d" % (same_c, total_c)
                else:
                    nnsight_s, agree = nnsight_runs[name][1], "-"
                scaled = nnsight_s * count / n
                row += ["%.2f s%s" % (scaled, "" if n == count else
                                      " (%d prompts: %.2f s, x %d/%d)" % (n, nnsight_s, count, n)),
                        "**%.1fx**" % (scaled / second), agree]
            rows.append(row)

    print_table(header, rows)
    print_load_average()


def run_nnsight(lm, code, name, prompts, steer, batch):
    """(c): the same NNsight code on nnsight, one trace per `batch` prompts, after a warm-up
    trace of one batch; returns (seconds, outputs)."""
    import torch
    module = lm._module
    previous = module.config._attn_implementation
    if name == "knockout":
        module.set_attn_implementation("eager")
    try:
        log("%s, %d prompts: (c) nnsight warm-up" % (name, len(prompts)))
        code(lm, prompts[:min(batch, 4)], steer)
        start = time.perf_counter()
        outs = []
        for first in range(0, len(prompts), batch):
            log("%s: (c) nnsight, prompts %d-%d of %d" % (name, first + 1,
                                                          min(first + batch, len(prompts)),
                                                          len(prompts)))
            outs.append(code(lm, prompts[first:first + batch], steer))
        seconds = time.perf_counter() - start
    finally:
        module.set_attn_implementation(previous)
    if name == "lens":
        return seconds, torch.cat(outs)
    return seconds, [t for out in outs for t in generated(name, out)]


if __name__ == "__main__":
    main()

"""The intervention benchmark's experiments through the Python API against nns-run, in the same
run: for each experiment (none, steering one layer, last-token capture of one layer, capture of
every layer) the same requests run through `nns-run --bundle` (a subprocess, as in
intervention_bench.py) and through `nnsc.LLM.generate` with the same bundle (nnsc.Program.load),
alternating, --repeat rounds. Greedy, EOS ignored, the generated tokens of both sides must be
equal. Optionally (--nnsight-prompts N) the first N requests also run through nnsight 0.8.1,
one prompt per trace and batched (`lm.generate(list_of_prompts)` with left padding, batches of
--nnsight-batch: the strongest way a researcher runs many prompts through nnsight), for the
speedup of the Python API over each.

usage: .venv/bin/python bench/python_bench.py [--build DIR] [--prompts N] [--max-tokens N]
           [--repeat R] [--nnsight-prompts N] [--nnsight-batch B]

nns-run's time is what it reports for serving the requests (model loading excluded); the Python
API's is the wall time of `llm.generate(...)` (tokenized prompts in, Results with their saves as
torch tensors out; the LLM is loaded and the program checked before timing). The table
(Markdown) goes to stdout, progress to stderr.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "python"))

import intervention_bench as ib  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nnsight-prompts", type=int, default=0)
    ap.add_argument("--nnsight-batch", type=int, default=16)
    a = ap.parse_args()
    os.environ.setdefault("NNSC_BUILD_DIR", a.build)
    import nnsc

    rng = random.Random(0)
    requests = [[rng.randrange(1, 49152) for _ in range(rng.randint(16, 64))]
                for _ in range(a.prompts)]
    workdir = tempfile.mkdtemp(prefix="nnsc-pybench-")
    ib.log("compiling the experiments' bundles")
    names = list(ib.DEFAULT_EXPERIMENTS)
    bundles = ib.compile_bundles(a.build, a.model, workdir, names)
    steer, steer_file = ib.steering_vector(workdir)
    llm = nnsc.LLM(a.model, threads=2)
    programs = {name: nnsc.Program.load(path, llm) for name, path in bundles.items()}

    cli = {name: [] for name in names}
    py = {name: [] for name in names}
    equal = {}
    for r in range(a.repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            needs_steer = ib.EXPERIMENTS[name][1]
            ib.log("round %d/%d: %s, %d prompts: nns-run" % (r + 1, a.repeat, name, a.prompts))
            seconds, cli_tokens = ib.run_engine(a.build, a.model, requests, a.max_tokens,
                                                bundles.get(name),
                                                steer_file if needs_steer else None, workdir)
            cli[name].append(seconds)
            ib.log("round %d/%d: %s, %d prompts: nnsc.LLM" % (r + 1, a.repeat, name, a.prompts))
            start = time.perf_counter()
            results = llm.generate(requests, programs.get(name),
                                   {"steer": steer} if needs_steer else None,
                                   max_tokens=a.max_tokens, temperature=0, ignore_eos=True,
                                   use_tqdm=False)
            py[name].append(time.perf_counter() - start)
            equal[name] = sum(x.token_ids == y for x, y in zip(results, cli_tokens))

    header = ["experiment (%d prompts x %d tokens)" % (a.prompts, a.max_tokens),
              "nns-run, median of %d" % a.repeat, "nnsc.LLM.generate, median of %d" % a.repeat,
              "Python / nns-run (median of rounds)", "greedy tokens equal"]
    rows = []
    for name in names:
        ratios = sorted(100 * (p / c - 1) for p, c in zip(py[name], cli[name]))
        rows.append([name,
                     "%.2f s (%s)" % (statistics.median(cli[name]),
                                      ", ".join("%.2f" % t for t in cli[name])),
                     "%.2f s (%s)" % (statistics.median(py[name]),
                                      ", ".join("%.2f" % t for t in py[name])),
                     "%+.1f%%" % statistics.median(ratios), "%d/%d" % (equal[name], a.prompts)])

    if a.nnsight_prompts:
        sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
        from nnsight import LanguageModel
        from reference import load_gguf_reference
        ib.log("nnsight: loading the same GGUF through transformers")
        hf, tok = load_gguf_reference(a.model)
        lm = LanguageModel(hf, tokenizer=tok)
        n = min(a.nnsight_prompts, a.prompts)
        header += ["nnsight 0.8.1, one prompt per trace (%d prompts)" % n,
                   "nnsc.LLM speedup",
                   "nnsight 0.8.1, batches of %d (%d prompts)" % (a.nnsight_batch, n),
                   "nnsc.LLM speedup"]
        for row, name in zip(rows, names):
            ours = statistics.median(py[name]) * n / a.prompts
            single, _ = ib.run_nnsight(lm, name, requests[:n], a.max_tokens, steer)
            batched, _ = ib.run_nnsight_batched(lm, name, requests[:n], a.max_tokens, steer,
                                                a.nnsight_batch)
            row += ["%.1f s" % single, "%.1fx" % (single / ours),
                    "%.1f s" % batched, "%.1fx" % (batched / ours)]
        print("nnsc.LLM's time for the first %d prompts is its median time for all %d scaled by"
              " %d/%d.\n" % (n, a.prompts, n, a.prompts))

    print_table(header, rows)
    print_load_average()


if __name__ == "__main__":
    main()

"""The NNsight parity suite: each program of programs/ (and examples/canonical/) run by nns-run
and, as nnsight 0.8.1 code on transformers, on the same weights and token ids (SmolLM2, or
another GGUF such as Gemma 3's: the prompts are tokenized by the model's own tokenizer).

Usage: parity.py NNS_RUN GGUF SRC_ROOT WORKDIR [--tensor-parallel-size=N] [--nns-run-arg=ARG ...]
                 [canonical | extended | NAME_SUBSTRING ...]
(canonical: the programs of examples/canonical; extended: the others; several words select
the union. With
--tensor-parallel-size=N nns-run splits the model over N ranks of one thread each, and the
same checks hold against the same single-device references. --nns-run-arg=ARG adds ARG to
every nns-run command, e.g. --nns-run-arg=--batch-invariant.)

Every experiment is a module programs/NN-name.py: PROGRAM (the .nns, relative to SRC_ROOT),
PROMPTS (keys of PROMPTS below; one request per prompt, in order), STEPS (tokens to generate),
optional params(ctx) (name -> tensor or number, bound with --param), nnsight(lm, prompts,
params, steps) -> (saves per request, generate's result or None), CHANGES_TOKENS (the
reference's tokens must differ from the plain greedy run, so the intervention is seen to act),
STOPS (the program ends the run in the prompt pass: no tokens), EDIT and EDIT_PARAMS (a
persistent edit, relative to SRC_ROOT, bound with nns-run --edit, and which of params() are its
--edit-param values) and XFAIL ((reason,
signature): a known gap; the experiment counts as an expected failure only while it fails with a
message containing the signature, any other failure is a FAIL and a pass is reported as XPASS).

Checks: the same save names per request, each save equal within rtol 1e-3 / atol 1e-3 + 1e-5 x its row's largest
magnitude (see
docs/Parity.md for the tolerance), and the generated token ids identical. The nns-run processes
run in a background thread while this process computes the nnsight references: two cores, one
for each side.
"""
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
from reference import load_gguf_reference  # noqa: E402

RTOL = 1e-3
ATOL = 1e-3
ROW_TOL = 1e-5
# Tokenized by transformers' tokenizer of the same GGUF (main fills PROMPTS); no digits, so
# nns-run's own tokenizer would give the same ids. 'france' and 'italy' differ in one token.
PROMPT_TEXTS = {
    "france": "The capital of France is the city of",
    "italy": "The capital of Italy is the city of",
    "alice": "Alice went to the market and bought",
    "tower": "The Eiffel Tower is located in",
    # Over 512 tokens, Gemma 3's sliding window, on either model.
    "long": " ".join(f"The {color} {animal} sat by the {place} and watched the {weather}."
                     for color in ("red", "green", "blue", "grey", "white")
                     for animal in ("fox", "owl", "cat", "horse", "crow")
                     for place in ("river", "hill", "road", "barn")
                     for weather in ("rain",)),
}
PROMPTS = {}


class Context:
    """What an experiment's params() may use: the nnsight model, the prompts, seeded random
    directions and plain (unintervened) runs."""

    def __init__(self, lm, tokenizer, hidden, steps):
        self.lm = lm
        self.tokenizer = tokenizer
        self.prompts = PROMPTS
        self.steps = steps
        self.hidden = hidden
        self.generator = torch.Generator().manual_seed(0)

    def unit_vector(self):
        v = torch.randn(self.hidden, generator=self.generator)
        return v / v.norm()

    def token(self, text):
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, (text, ids)
        return ids[0]

    def plain_tokens(self, name):
        with self.lm.generate([PROMPTS[name]], max_new_tokens=self.steps, do_sample=False) as tr:
            result = tr.result.save()
        return [int(t) for t in result[0, len(PROMPTS[name]):]]

    def plain_site(self, name, layer):
        """[T, hidden]: layer's output over the prompt, without interventions."""
        with self.lm.trace([PROMPTS[name]]):
            h = self.lm.model.layers[layer].output[0].save()
        return h.detach()

    def last_token_norm(self, name, layer):
        """The norm of layer's output at the prompt's last token: a scale for steering vectors
        that acts alike on models whose residual streams differ in size."""
        return float(self.plain_site(name, layer).reshape(-1, self.hidden)[-1].norm())

    def plain_last_rows(self, name, layer):
        """[steps, hidden]: layer's output at the computed last token of every step."""
        with self.lm.generate([PROMPTS[name]], max_new_tokens=self.steps, do_sample=False) as tr:
            rows = list().save()
            for step in tr.iter[0:self.steps]:
                rows.append(self.lm.model.layers[layer].output[0, -1])
        return torch.stack(rows).detach()


def load_experiments(selection):
    directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
    experiments = []
    for file in sorted(os.listdir(directory)):
        if not file.endswith(".py"):
            continue
        spec = importlib.util.spec_from_file_location(file[:-3].replace("-", "_"),
                                                      os.path.join(directory, file))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.NAME = file[:-3]
        canonical = module.PROGRAM.startswith("examples/canonical/")
        # The union of the groups and name substrings asked for; nothing asked: all.
        chosen = (not selection or ("canonical" in selection and canonical)
                  or ("extended" in selection and not canonical)
                  or any(name in file for name in selection
                         if name not in ("canonical", "extended")))
        if not chosen:
            continue
        experiments.append(module)
    if not experiments:
        sys.exit(f"parity.py: no experiment matches {selection}")
    return experiments


def param_args(name, params, work, edit_params=()):
    """--param flags (--edit-param for the edit's): numbers inline, tensors through one
    safetensors file."""
    args, tensors = [], {}
    for key, value in params.items():
        flag = "--edit-param" if key in edit_params else "--param"
        if isinstance(value, torch.Tensor):
            tensors[key] = value.detach().float().contiguous()
            args += [flag, f"{key}=@{os.path.join(work, name + '.params.safetensors')}:{key}"]
        elif isinstance(value, float):
            args += [flag, f"{key}={value!r}"]
        else:
            args += [flag, f"{key}={int(value)}"]
    if tensors:
        save_file(tensors, os.path.join(work, name + ".params.safetensors"))
    return args


TENSOR_PARALLEL = 1
NNS_RUN_ARGS = []


def run_nns(nns_run, gguf, src, work, exp, args):
    """(saves per request, generated ids per request) from one nns-run process, or an error."""
    out = os.path.join(work, exp.NAME)
    cmd = [nns_run, "--model", gguf, "--trace", os.path.join(src, exp.PROGRAM), "--threads", "1",
           "--max-tokens", str(exp.STEPS), "--save-dir", out, "--quiet"] + args
    if TENSOR_PARALLEL > 1:
        cmd += ["--tensor-parallel-size", str(TENSOR_PARALLEL)]
    cmd += NNS_RUN_ARGS
    if hasattr(exp, "EDIT"):
        cmd += ["--edit", os.path.join(src, exp.EDIT)]
    for key in exp.PROMPTS:
        cmd += ["--prompt-ids", ",".join(map(str, PROMPTS[key]))]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return RuntimeError(f"nns-run exited {proc.returncode}: {proc.stderr.strip()[-600:]}\n"
                            f"  command: {' '.join(cmd)}")
    first = json.load(open(os.path.join(out, "0.json")))
    if "invokes" in first:
        # A trace with invokes is one request: one saves file, one completion per invoke.
        return ([load_file(os.path.join(out, "0.safetensors"))],
                [invoke["ids"] for invoke in first["invokes"]])
    saves, tokens = [], []
    for i in range(len(exp.PROMPTS)):
        saves.append(load_file(os.path.join(out, f"{i}.safetensors")))
        tokens.append(json.load(open(os.path.join(out, f"{i}.json")))["ids"])
    return saves, tokens


def compare(exp, got, ref_saves, ref_tokens):
    """Raises AssertionError naming the first difference; returns (saves, max abs diff)."""
    got_saves, got_tokens = got
    if len(got_saves) == 1 and len(ref_saves) > 1:
        ref_saves = [{key: value for saves in ref_saves for key, value in saves.items()}]
    worst, count = 0.0, 0
    for i, (g, r) in enumerate(zip(got_saves, ref_saves)):
        assert sorted(g) == sorted(r), f"request {i}: saves {sorted(g)} != nnsight's {sorted(r)}"
        for key, ref in r.items():
            ref = torch.as_tensor(ref).detach()
            value = g[key]
            assert value.shape == ref.shape, \
                f"'{key}': shape {list(value.shape)} != nnsight's {list(ref.shape)}"
            if ref.is_floating_point():
                value, ref = value.float(), ref.float()
                # fp32 rounding in a matmul grows with the whole row's scale, not the element's.
                scale = ref.abs().amax(-1, keepdim=True) if ref.dim() else ref.abs()
                bound = ATOL + ROW_TOL * scale + RTOL * ref.abs()
                diff = float((value - ref).abs().max()) if ref.numel() else 0.0
                excess = (value - ref).abs() - bound
                if bool((excess > 0).any()):
                    at = tuple(int(k) for k in torch.unravel_index(excess.argmax(), excess.shape))
                    raise AssertionError(
                        f"request {i}: '{key}' differs by up to {diff:.3e}; worst against its "
                        f"bound at {list(at)}: {float(value[at]):.6g} vs nnsight's "
                        f"{float(ref[at]):.6g} (bound {float(bound[at]):.3g})")
                worst = max(worst, diff)
            else:
                assert torch.equal(value.long(), ref.long()), f"'{key}': {value} != {ref}"
            count += 1
    assert got_tokens == ref_tokens, f"tokens {got_tokens} != nnsight's {ref_tokens}"
    return count, worst


def reference(exp, lm, params):
    prompts = [PROMPTS[key] for key in exp.PROMPTS]
    saves, result = exp.nnsight(lm, prompts, params, exp.STEPS)
    if result is None:
        return saves, [[] for _ in prompts]
    # generate's result holds prompt + completion per row, cut at the end-of-sequence token.
    return saves, [[int(t) for t in row[len(p):]] for row, p in zip(result, prompts)]


def check(exp, lm, tokenizer, model, ref, got):
    """(saves compared, max abs diff, tokens compared); AssertionError on any difference."""
    if isinstance(ref, Exception):
        raise AssertionError(f"nnsight reference failed: {ref!r}")
    ref_saves, ref_tokens = ref
    if getattr(exp, "STOPS", False):
        assert ref_tokens == [[] for _ in exp.PROMPTS], ref_tokens
    if getattr(exp, "CHANGES_TOKENS", False):
        ctx = Context(lm, tokenizer, model.config.hidden_size, exp.STEPS)
        plain = [ctx.plain_tokens(key) for key in exp.PROMPTS]
        assert ref_tokens != plain, "the intervention left nnsight's tokens unchanged"
    if isinstance(got, Exception):
        raise AssertionError(f"nns-run side failed: {got}")
    count, worst = compare(exp, got, ref_saves, ref_tokens)
    return count, worst, sum(len(t) for t in ref_tokens)


def main():
    global TENSOR_PARALLEL
    nns_run, gguf, src, work = sys.argv[1:5]
    selection = sys.argv[5:]
    for arg in list(selection):
        if arg.startswith("--tensor-parallel-size="):
            TENSOR_PARALLEL = int(arg.split("=", 1)[1])
            selection.remove(arg)
        elif arg.startswith("--nns-run-arg="):
            NNS_RUN_ARGS.append(arg.split("=", 1)[1])
            selection.remove(arg)
    experiments = load_experiments(selection)
    os.makedirs(work, exist_ok=True)
    started = time.time()
    model, tokenizer = load_gguf_reference(gguf)
    PROMPTS.update({key: tokenizer(text)["input_ids"] for key, text in PROMPT_TEXTS.items()})
    if len(PROMPTS["france"]) != len(PROMPTS["italy"]):
        sys.exit("parity.py: 'france' and 'italy' must have one length for patching")
    from nnsight import LanguageModel
    lm = LanguageModel(model, tokenizer=tokenizer)

    params = {}
    for exp in experiments:
        ctx = Context(lm, tokenizer, model.config.hidden_size, exp.STEPS)
        params[exp.NAME] = exp.params(ctx) if hasattr(exp, "params") else {}
    nns = {}

    def run_all():
        for exp in experiments:
            try:
                nns[exp.NAME] = run_nns(nns_run, gguf, src, work, exp,
                                        param_args(exp.NAME, params[exp.NAME], work,
                                                   getattr(exp, "EDIT_PARAMS", ())))
            except Exception as error:  # noqa: BLE001 - reported with the experiment
                nns[exp.NAME] = error

    worker = threading.Thread(target=run_all)
    worker.start()
    refs = {}
    for exp in experiments:
        try:
            refs[exp.NAME] = reference(exp, lm, params[exp.NAME])
        except Exception as error:  # noqa: BLE001 - reported per experiment below
            refs[exp.NAME] = error
    worker.join()

    passed, expected, failed = 0, 0, 0
    for exp in experiments:
        reason, signature = getattr(exp, "XFAIL", (None, None))
        try:
            count, worst, tokens = check(exp, lm, tokenizer, model, refs[exp.NAME], nns[exp.NAME])
        except AssertionError as error:
            message = str(error)
            if reason and signature in message:
                expected += 1
                print(f"XFAIL {exp.NAME}: {reason}\n  ({message.splitlines()[0]})")
            else:
                failed += 1
                print(f"FAIL {exp.NAME}: {message}")
            continue
        passed += 1
        note = f" (XPASS: marked '{reason}'; remove the mark)" if reason else ""
        print(f"PASS {exp.NAME}: {count} saves equal (max abs diff {worst:.2e}), "
              f"{tokens} greedy tokens identical{note}")
    if TENSOR_PARALLEL > 1:
        print(f"parity: nns-run with --tensor-parallel-size {TENSOR_PARALLEL}")
    if NNS_RUN_ARGS:
        print(f"parity: nns-run with {' '.join(NNS_RUN_ARGS)}")
    print(f"parity: {len(experiments)} experiments, {passed} passed, {expected} expected "
          f"failures, {failed} failed ({time.time() - started:.0f} s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

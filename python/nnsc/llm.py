"""LLM: a model and its engine in this process (vLLM's `LLM`, with nnsc programs)."""

import collections
import itertools
import os
import tempfile
import threading
import warnings

import torch

from ._extension import DEFAULT_MODEL, _nnsc
from .errors import CompileError
from .program import Program
from .requests import normalize_params, normalize_prompts, param_tensor, token_id_list
from .result import Completion, Result

# Engine options and their defaults (nns-run's --max-num-seqs, ...): the scheduler's are the
# C++ SchedulerConfig's, read from the extension so they are stated once.
_DEFAULTS = _nnsc.defaults()
ENGINE_OPTIONS = dict({"device": "cpu", "weights": "packed", "seed": 0, "threads": None,
                       "batch_invariant": _DEFAULTS["sampling"]["batch_invariant"]},
                      **_DEFAULTS["scheduler"])
# Sampling defaults of generate(): the C++ SamplingParams' (greedy), shared by nns-run and
# nns-serve.
SAMPLING_DEFAULTS = dict(_DEFAULTS["sampling"])

_DTYPES = {"float32": "fp32", "fp32": "fp32", torch.float32: "fp32",
           "bfloat16": "bf16", "bf16": "bf16", torch.bfloat16: "bf16"}

# How long the engine runs without the GIL before Python gets control back (progress bar,
# Ctrl-C): short enough to feel immediate, long enough to cost nothing (one step is ~10-100 ms).
_SLICE_SECONDS = 0.1

Site = collections.namedtuple("Site", "path phase shape dtype layer writable")
Site.__doc__ = ("A hook site: dotted path, phase ('forward', 'logits', 'samples', 'result'), "
                "shape for one sequence and step ('T': its token count), dtype, decoder layer "
                "(-1: none) and whether programs may write it.")


class Tokenizer:
    """The model's tokenizer (Hugging Face-exact BPE from the GGUF or tokenizer.json)."""

    def __init__(self, model):
        self._model = model

    def encode(self, text, add_special_tokens=True):
        return self._model.encode(text, add_special_tokens)

    def decode(self, token_ids, skip_special_tokens=True):
        """The text of `token_ids`: an int, a list of ints or an integer tensor (a save of
        argmax ids, flattened)."""
        return self._model.decode(token_id_list(token_ids), skip_special_tokens)

    @property
    def eos_token_ids(self):
        return list(self._model.eos_token_ids)


def _looks_like_path(value):
    if isinstance(value, os.PathLike):
        return True
    return (isinstance(value, str) and "\n" not in value and value.endswith((".nns", ".nnsb"))
            and os.path.exists(value))


class LLM:
    """A model loaded in this process with its continuous-batching engine.

    `model`: a GGUF file or Hugging Face directory (default: the bundled SmolLM2-135M);
    `dtype`: "float32" or "bfloat16"; engine options as keywords: device ("cpu"), weights
    ("packed", or "blocks" to keep a GGUF file's blocks only: docs/Engine.md, "Memory"), seed,
    threads (torch.set_num_threads; default: leave torch's), max_num_seqs,
    max_num_batched_tokens, max_model_len, num_blocks, block_size, enable_prefix_caching,
    batch_invariant (every generate() in batch-invariant mode unless it says otherwise:
    docs/Engine.md, "Batch-invariant mode")."""

    def __init__(self, model=None, dtype="float32", **engine_options):
        unknown = sorted(set(engine_options) - set(ENGINE_OPTIONS))
        if unknown:
            raise TypeError("unknown engine option(s) %s (known: %s)"
                            % (", ".join(unknown), ", ".join(ENGINE_OPTIONS)))
        options = dict(ENGINE_OPTIONS, **engine_options)
        if dtype not in _DTYPES:
            raise ValueError("dtype must be 'float32' or 'bfloat16', got %r" % (dtype,))
        if options["threads"] is not None:
            torch.set_num_threads(int(options["threads"]))
        self.model_path = os.fspath(model) if model is not None else DEFAULT_MODEL
        try:
            self._model = _nnsc.Model(self.model_path, _DTYPES[dtype], options["device"],
                                      options["weights"])
        except RuntimeError as e:
            raise ValueError(str(e)) from None
        self._engine = _nnsc.Engine(
            self._model, options["max_num_seqs"], options["max_num_batched_tokens"],
            options["max_model_len"], options["num_blocks"], options["block_size"],
            options["enable_prefix_caching"], options["seed"])
        self.tokenizer = Tokenizer(self._model) if self._model.has_tokenizer else None
        self._batch_invariant = bool(options["batch_invariant"])
        self._lock = threading.Lock()
        self._workdir = tempfile.TemporaryDirectory(prefix="nnsc-")
        self._compiled = {}  # source text -> Program (failed compiles are not cached)
        self._bundles = {}   # bundle path -> _nnsc.Bundle loaded for this model
        self._counter = itertools.count()

    @property
    def max_model_len(self):
        return self._engine.max_model_len

    def sites(self):
        """Every hook site of the model in firing order (nnsc --print-sites)."""
        return [Site(path, phase, ["T" if d == -1 else d for d in shape], dtype, layer, writable)
                for path, phase, shape, dtype, layer, writable in self._model.sites()]

    # --- programs ---------------------------------------------------------------------------

    def compile(self, source_or_path):
        """Compiles `.nns` source text, or the file at a path, for this model. Raises
        CompileError with the diagnostics (FILE:LINE:COL, the line and a caret)."""
        if _looks_like_path(source_or_path):
            path = os.fspath(source_or_path)
            if path.endswith(".nnsb"):
                return Program.load(path, self)
            with open(path) as f:
                source, name = f.read(), path
        elif isinstance(source_or_path, str):
            source, name = source_or_path, "program.nns"
        else:
            raise TypeError("compile takes .nns source text or a path, got %s"
                            % type(source_or_path).__name__)
        key = (name, source)
        if key in self._compiled:
            return self._compiled[key]
        # One file per compile: dlopen would hand back a library loaded earlier under a name.
        out = os.path.join(self._workdir.name, "program-%d.nnsb" % next(self._counter))
        ok, diagnostics = _nnsc.compile_source(self._model, source, name, out)
        if not ok:
            raise CompileError(diagnostics)
        if diagnostics:
            # The compiler's warnings, e.g. a stop() that ends every invoke of the request.
            warnings.warn(diagnostics.rstrip("\n"), stacklevel=2)
        program = Program(out, source, _keep=self._workdir)
        self._bundle(program)
        self._compiled[key] = program
        return program

    def _program(self, program):
        if program is None or isinstance(program, Program):
            return program
        if isinstance(program, (str, os.PathLike)):
            return self.compile(program)
        raise TypeError("program must be a Program, .nns source or a path, got %s"
                        % type(program).__name__)

    def _bundle(self, program):
        """The bundle of `program` loaded and checked for this model (once per path)."""
        bundle = self._bundles.get(program.path)
        if bundle is None:
            bundle = _nnsc.Bundle(self._model, program.path)
            self._bundles[program.path] = bundle
        # Another Program of the same path (Program.load) shares the bundle, not its traces.
        if program._traces is None:
            program._traces = bundle.traces()
            program._bundle = bundle
        return bundle

    # --- generation -------------------------------------------------------------------------

    def generate(self, prompts, program=None, params=None, *, trace=None, max_tokens=None,
                 temperature=None, top_k=None, top_p=None, seed=None, ignore_eos=None,
                 stop_token_ids=None, batch_invariant=None, use_tqdm=True):
        """Runs every request in one continuous batch and returns one Result per request, in
        order. `prompts`: a string or token ids (one request) or a list of them; with a
        multi-invoke trace, a list of prompts per request (one per invoke). `program`: a
        Program, .nns source or a path. `params`: {name: value} for every request, or a list of
        such dicts (one per request); values are torch tensors, numpy arrays, numbers or lists.
        Sampling as vLLM's SamplingParams; a field not given takes SAMPLING_DEFAULTS, the
        engine's own (greedy, 16 tokens), as in nns-run and nns-serve. `batch_invariant`: these
        requests' saves, logits and tokens do not depend on what else is in the batch
        (default: the LLM's batch_invariant)."""
        program = self._program(program)
        bundle = self._bundle(program) if program is not None else None
        invokes = program.trace(trace)["invokes"] if program is not None else 1
        requests = normalize_prompts(prompts, invokes)
        params = normalize_params(params, len(requests))
        if program is None and any(params):
            raise ValueError("params are given but there is no program to take them")
        tokenized = [[self._token_ids(p, "request %d" % i) for p in request]
                     for i, request in enumerate(requests)]
        given = dict(temperature=temperature, top_k=top_k, top_p=top_p,
                     max_tokens=max_tokens, ignore_eos=ignore_eos)
        sampling = {k: type(SAMPLING_DEFAULTS[k])(v if v is not None else SAMPLING_DEFAULTS[k])
                    for k, v in given.items()}
        sampling.update(seed=seed, stop_token_ids=[int(t) for t in (stop_token_ids or [])],
                        batch_invariant=bool(self._batch_invariant if batch_invariant is None
                                             else batch_invariant))
        with self._lock:
            queued = []
            try:
                for i, (ids, given) in enumerate(zip(tokenized, params)):
                    values = [(name, param_tensor(name, value)) for name, value in given.items()]
                    try:
                        queued.append(self._engine.add(ids, bundle, trace or "", values,
                                                       **sampling))
                    except ValueError as e:
                        raise ValueError("request %d: %s" % (i, e)) from None
                    except TypeError as e:
                        raise TypeError("request %d: %s" % (i, e)) from None
                finished = self._run(queued, use_tqdm)
            except BaseException:
                # Bad input, Ctrl-C or an engine error: nothing of this call stays queued.
                for request in queued:
                    for id in request.ids:
                        self._engine.abort(id)
                self._engine.run(0.0)
                raise
        return [self._result(i, requests[i], queued[i], finished, program, trace)
                for i in range(len(queued))]

    def _token_ids(self, prompt, where):
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise ValueError("%s: the model has no tokenizer; give prompts as token ids"
                                 % where)
            return self.tokenizer.encode(prompt)
        return prompt  # the engine checks the ids against the vocabulary

    def _run(self, queued, use_tqdm):
        """Steps the engine until every queued sequence finished; {id: (prompt_ids,
        completion_ids, finish_reason)}."""
        owner = {id: i for i, request in enumerate(queued) for id in request.ids}
        left = [len(request.ids) for request in queued]
        finished = {}
        bar = None
        if use_tqdm:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(queued), desc="Processed prompts", unit="req",
                       dynamic_ncols=True)
        try:
            tokens = 0
            while len(finished) < len(owner):
                if self._engine.finished:
                    raise RuntimeError("the engine finished without %d of the requests"
                                       % (len(owner) - len(finished)))
                done, sampled = self._engine.run(_SLICE_SECONDS)
                tokens += sampled
                for id, prompt_ids, completion_ids, reason in done:
                    if id not in owner:
                        continue
                    finished[id] = (prompt_ids, completion_ids, reason)
                    left[owner[id]] -= 1
                    if bar is not None and left[owner[id]] == 0:
                        bar.update(1)
                if bar is not None:
                    bar.set_postfix_str("%d tokens" % tokens, refresh=False)
        finally:
            if bar is not None:
                bar.close()
        return finished

    def _result(self, index, prompts, request, finished, program, trace):
        invoke_names = program.trace(trace)["invoke_names"] if program is not None else []
        outputs = []
        for k, id in enumerate(request.ids):
            prompt_ids, completion_ids, reason = finished[id]
            text = (self.tokenizer.decode(completion_ids) if self.tokenizer is not None
                    else None)
            outputs.append(Completion(
                prompt=prompts[k] if isinstance(prompts[k], str) else None,
                prompt_token_ids=list(prompt_ids), token_ids=list(completion_ids), text=text,
                finish_reason=reason, invoke=invoke_names[k] if k < len(invoke_names) else None))
        error = request.error
        return Result(index=index, outputs=outputs,
                      finish_reason="error" if error else outputs[-1].finish_reason,
                      error=error, _saves=request.saves)

"""The context managers: `model.trace(...)` / `model.generate(...)` (Tracer), `tracer.invoke`
(Invoker) and `tracer.iter[...]` (StepRange). Leaving the outermost one turns the recording into
nns (emit.py), compiles it, runs it and hands the saves back as torch tensors."""

import ctypes
import inspect
import re
import sys
from collections import OrderedDict

import torch

from ..errors import CompileError
from . import emit, operands, shapes
from .cache import Cache, CacheView, check_one_request
from .errors import TraceError, user_location
from .proxy import _UNSET, Part, Proxy, _meta, _same_place
from .recording import Recording

_NNS_LINE = re.compile(r"^program\.nns:(\d+):\d+: error: (.*)$", re.M)
# Recordings (of one `with` line) whose plans and programs are kept: a loop alternating a few
# variants of a block (one per coefficient, say) keeps them all.
_PROGRAMS_PER_LOCATION = 4


def _prompt_list(prompts):
    """A prompt or a list of them (text, or token ids) as a list."""
    if prompts is None:
        return []
    if isinstance(prompts, str):
        return [prompts]
    if isinstance(prompts, torch.Tensor):
        prompts = prompts.tolist()
    if isinstance(prompts, (list, tuple)) and prompts and all(
            isinstance(t, int) for t in prompts):
        return [list(prompts)]
    return [p if isinstance(p, str) else list(p) for p in prompts]


class Invoker:
    """`with tracer.invoke(prompts):` — the code inside sees these prompts as its batch
    (`output[0]` is the first of them); without prompts, every prompt of the trace."""

    def __init__(self, tracer, prompts):
        self._tracer = tracer
        self._prompts = _prompt_list(prompts)

    def __enter__(self):
        tracer = self._tracer
        if tracer.recording.invoke is not None and tracer._explicit_invoke:
            raise TraceError("tracer.invoke inside another invoke",
                             "invokes are side by side in the trace")
        tracer.recording.flush()
        if self._prompts:
            self._slots = tracer._add_prompts(self._prompts)
        else:
            self._slots = None  # every prompt of the invokes before it, as nnsight's
        tracer._explicit_invoke = True
        tracer.recording.invoke = self._slots if self._slots is not None else "all"
        return tracer

    def __exit__(self, exc_type, exc, traceback):
        tracer = self._tracer
        if exc_type is None:
            tracer.recording.flush()
        tracer.recording.invoke = None
        return False


class StepRange:
    """`tracer.iter[a:b]`: iterating runs the loop body once per generation step, each
    recorded as nns's `for step in steps[k] { ... }`. The block form, `with tracer.iter[a:b]:`,
    does the same, as NNsight 0.8 does (it calls the form deprecated): Python runs the body
    once, for the first step, and leaving the block runs the body's source again for each
    other step (_BlockBody)."""

    def __init__(self, tracer, steps):
        self._tracer = tracer
        self._steps = steps

    def __iter__(self):
        tracer = self._tracer
        recording = tracer.recording
        for step in self._steps:
            recording.flush()
            recording.step = step if tracer._generating else None
            try:
                yield step
            finally:
                recording.flush()
                recording.step = None

    def __len__(self):
        return len(self._steps)

    def __enter__(self):
        tracer = self._tracer
        tracer.check_open("tracer.iter")
        if not len(self._steps):
            raise TraceError("this tracer.iter selects no generation step",
                             "the generation has %d steps" % tracer._steps)
        self._frame = sys._getframe(1)
        self._body = _BlockBody.of(self._frame)
        tracer.recording.flush()
        tracer.recording.step = self._steps[0] if tracer._generating else None
        return self._steps[0]

    def __exit__(self, exc_type, exc, traceback):
        recording = self._tracer.recording
        try:
            if exc_type is None:
                recording.flush()
                for step in list(self._steps)[1:]:
                    recording.step = step if self._tracer._generating else None
                    self._body.run(self._frame, step)
                    recording.flush()
        finally:
            recording.step = None
            self._frame = None
        return False


class _BlockBody:
    """The body of the `with tracer.iter[...]:` block at a frame's current line, compiled from
    its source file (so its lines are the user's, for TraceErrors), once per location."""

    _compiled = {}  # (the frame's code, line) -> _BlockBody

    def __init__(self, code, target):
        self.code = code
        self.target = target  # the name after `as`, if any

    @classmethod
    def of(cls, frame):
        import ast
        import linecache
        filename, line = frame.f_code.co_filename, frame.f_lineno
        known = cls._compiled.get((frame.f_code, line))
        if known is not None:
            return known
        source = "".join(linecache.getlines(filename, frame.f_globals))
        block = None
        try:
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.With) and node.lineno <= line < node.body[0].lineno \
                        and (block is None or node.lineno > block.lineno):
                    block = node
        except SyntaxError:
            block = None
        if block is None:
            raise TraceError("the source of this `with tracer.iter[...]:` block is not "
                             "available, so it cannot run once per step",
                             "write the loop form: for step in tracer.iter[...]:")
        target = block.items[0].optional_vars
        body = cls(compile(ast.Module(body=block.body, type_ignores=[]), filename, "exec"),
                   target.id if isinstance(target, ast.Name) else None)
        cls._compiled[(frame.f_code, line)] = body
        return body

    def run(self, frame, step):
        """Runs the body in the frame's variables (one namespace, so comprehensions in the body
        see them) and writes back what it assigned."""
        variables = frame.f_locals
        namespace = dict(frame.f_globals)
        namespace.update(variables)
        if self.target:
            namespace[self.target] = step
        before = dict(namespace)
        exec(self.code, namespace)
        changed = {name: value for name, value in namespace.items()
                   if name != "__builtins__" and before.get(name, _UNSET) is not value}
        if variables is frame.f_globals:
            variables.update(changed)
            return
        variables.update(changed)
        locals_to_fast = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)
        if changed and locals_to_fast:
            locals_to_fast(ctypes.py_object(frame), ctypes.c_int(0))


class _Iter:
    """`tracer.iter`: indexed by a step or a slice of the generation's steps."""

    def __init__(self, tracer):
        self._tracer = tracer

    def __getitem__(self, key):
        count = self._tracer._steps
        if isinstance(key, int):
            steps = range(count)[key:key + 1 or None]
        elif isinstance(key, slice):
            steps = range(count)[key]
        elif isinstance(key, (list, tuple)) and all(isinstance(k, int) for k in key):
            steps = [range(count)[k] for k in key]
        else:
            raise TraceError("tracer.iter takes an int, a slice or a list of steps: "
                             "tracer.iter[0:5], tracer.iter[[0, 2, 4]]")
        return StepRange(self._tracer, steps)


class ResultValue:
    """`tracer.result`: prompt and generated token ids per prompt, [B, prompt + generated],
    taken from the engine's completions. It can be saved, nothing else: nns has no prompt
    tokens to compute with."""

    def __init__(self, tracer):
        self._tracer = tracer
        self._saved = False
        self._value = _UNSET

    def save(self):
        self._tracer.check_open("save()")
        if not self._saved:
            self._saved = True
            self._tracer._result_saves.append(self)
        return self

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._value is not _UNSET:
            return getattr(self._value, name)
        raise self._only_saved()

    def __getitem__(self, key):
        if self._value is not _UNSET:
            return self._value[key]
        raise self._only_saved()

    @staticmethod
    def _only_saved():
        return TraceError("tracer.result can only be saved inside the trace",
                          "save it (tracer.result.save()) and use the tensor after the trace")

    def __repr__(self):
        return repr(self._value) if self._value is not _UNSET else "<nnsc tracer.result>"


class Tracer:
    """One `model.trace(...)` or `model.generate(...)` block."""

    def __init__(self, model, prompts, generating, max_new_tokens=None, sampling=None):
        self.model = model
        self.recording = Recording()
        self.prompts = []
        self.saved = []
        self.closed = False
        self.program_sources = []
        self.programs = []
        self.program_params = []  # per program, its requests' params ({name: tensor} each)
        self._result_saves = []
        self._caches = []
        self._cached_sites = {}  # prompt slot -> the sites its caches' statements list
        self._generating = generating
        self._steps = max_new_tokens if generating else 1
        self._sampling = sampling or {}
        self._explicit_invoke = False
        self.reused = False  # whether the plans and programs came from the cache
        self._lengths = []
        self._given = _prompt_list(prompts)
        self.iter = _Iter(self)

    # --- the user's API -----------------------------------------------------------------------

    def __enter__(self):
        self.model._enter(self)
        self._location = user_location()  # the `with` line: the key of the program cache
        if self._given:
            self._implicit = self._add_prompts(self._given)
        return self

    def invoke(self, prompts=None):
        return Invoker(self, prompts)

    def all(self):
        return self.iter[:]

    def stop(self):
        """Ends the forward pass once it reached the sites used so far; nothing is generated."""
        self.check_open("tracer.stop()")
        self.recording.flush()
        self.recording.emit("stop()", frozenset(), self.recording.step, everywhere=True)

    def cache(self, modules=None, device=torch.device("cpu"), dtype=None, detach=True,
              include_output=True, include_inputs=False, non_blocking=False):
        """nnsight's record of every module's output (or of `modules`: envoys or nnsight paths
        such as "model.model.layers.3"), and inputs with `include_inputs`, over the run, for the
        current invoke's prompts. Returns the CacheView that holds them after the block (module
        outputs are what the model continued with, after the block's writes). `detach` and
        `non_blocking` change nothing: nnsc's values are on no autograd graph and arrive on
        the CPU."""
        self.check_open("tracer.cache()")
        cache = Cache(self, modules, include_output, include_inputs, device, dtype)
        self._caches.append(cache)
        return CacheView(cache, None)

    def barrier(self, count):
        """nnsight's barrier: nnsc orders values across invokes itself, so it does nothing."""
        return lambda: None

    @property
    def result(self):
        if not self._generating:
            raise TraceError("tracer.result in model.trace", "use model.generate(...)")
        return ResultValue(self)

    @property
    def program_source(self):
        """The `.nns` text run for this trace (the first, when prompts needed several)."""
        return self.program_sources[0] if self.program_sources else None

    @property
    def program(self):
        return self.programs[0] if self.programs else None

    # --- what envoys and proxies call ---------------------------------------------------------

    def check_open(self, what):
        if self.closed:
            raise TraceError("%s after the trace ended" % what,
                             "do this inside the `with model.trace(...)` block")

    def _add_prompts(self, prompts):
        start = len(self.prompts)
        for prompt in prompts:
            self.prompts.append(prompt)
            ids = prompt if not isinstance(prompt, str) else self.model.tokenizer.encode(prompt)
            self._lengths.append(len(ids))
        return list(range(start, len(self.prompts)))

    def _invoke_slots(self):
        invoke = self.recording.invoke
        if invoke == "all":
            if not self.prompts:
                raise TraceError("an empty tracer.invoke() before any prompt",
                                 "it sees the prompts of the invokes before it: put it last")
            return list(range(len(self.prompts)))
        if invoke is not None:
            return invoke
        if self._explicit_invoke or not self._given:
            raise TraceError("a model value outside tracer.invoke",
                             "with invokes, read and write the model inside one; give "
                             "prompts to model.trace(...) to trace without invokes")
        return self._implicit

    def site(self, path):
        """The value of site `path` for the current invoke's prompts: [B, T, ...]."""
        self.check_open("reading %s" % path)
        self.recording.flush(keep_site=path)
        slots = self._invoke_slots()
        site = self.model._site_info[path]
        expr, writable = path, site.writable
        # transformers' generate computes lm_head for the last position only ([B, 1, ...]),
        # as the engine does: the row the sampler uses.
        last_row_only = path.startswith("lm_head.") and self._generating
        if path == "lm_head.output" and self._generating:
            expr = "logits.unsqueeze(0)"
        elif path in ("lm_head.output", "lm_head.input") and "model.norm.output" in \
                self.model._site_info:
            # The engine's lm_head computes the sampled row only; a trace's has every position,
            # recomputed here from the final norm's output (read-only).
            expr = "lm_head(model.norm.output)" if path == "lm_head.output" \
                else "model.norm.output"
            writable = False
        prompt_pass = self.recording.step in (None, 0) and not last_row_only
        parts = []
        for slot in slots:
            length = self._lengths[slot] if prompt_pass else 1
            # S (-2), the positions attention looks at: the prompt and the tokens so far.
            context = self._lengths[slot] + (self.recording.step or 0)
            sizes = [length if d == "T" else context if d == -2 else d for d in site.shape]
            dtype = torch.int64 if site.dtype == "int64" else torch.float32
            parts.append(Part(expr, _meta(sizes, dtype), {slot}, self.recording.step,
                              lvalue=expr if writable else None))
        # Prompts of different lengths: the dimensions whose positions counted from the start
        # differ from nnsight's left-padded ones (T in the prompt pass, S at every step).
        ragged = len({self._lengths[s] for s in slots}) > 1
        token_dims = tuple(i for i, d in enumerate(site.shape)
                           if ragged and ((d == "T" and prompt_pass) or d == -2))
        return Proxy(self, parts, split=True, site=path, token_dims=token_dims)

    def bind(self, part):
        if part.text is None:
            name = self.recording.local()
            self.recording.emit("%s = %s" % (name, part.expr), part.slots, part.step)
            part.text = name
        return part.text

    def save_part(self, proxy, part):
        text = proxy._read(part)
        name = self.recording.save_name()
        self.recording.emit("%s = %s.save()" % (name, text), part.slots, self.recording.step)
        return (name, part.slots, self.recording.step)

    def assign(self, path, value):
        """`module.output = value` (or `.input`)."""
        target = self.site(path)
        if isinstance(value, Proxy) and _same_place(value, target):
            return  # `module.output += v` has already written in place
        shapes.write(target, value, "=")

    def skip(self, module_path, output_path, value):
        self.check_open(".skip()")
        target = self.site(output_path)
        value = operands.operand(self, value)
        rank = target._rank
        for i, part in enumerate(target._parts):
            source = operands.aligned(value, i, rank, len(target._parts))
            text = operands.bound_text(self, source)
            self.recording.emit("%s.skip(%s)" % (module_path, text), part.slots | source.slots,
                                self.recording.step)

    def call_module(self, module_path, input_path, output_path, value):
        self.check_open("a module call")
        value = operands.operand(self, value)
        sites = self.model._site_info
        width_in, width_out = sites[input_path].shape[-1], sites[output_path].shape[-1]

        def meta_fn(m):
            if m.dim() == 0 or m.shape[-1] != width_in:
                raise TraceError("%s takes values whose last dimension is %s, got shape %s"
                                 % (module_path, width_in, list(m.shape)))
            return _meta(list(m.shape[:-1]) + [width_out])
        return operands.per_part(value, lambda t: "%s(%s)" % (module_path, t), meta_fn)

    # --- leaving the block ------------------------------------------------------------------

    def __exit__(self, exc_type, exc, traceback):
        self.model._exit(self)
        if exc_type is not None:
            self.closed = True
            return False
        frame = sys._getframe(1)
        try:
            self.recording.flush()
            if not self.prompts:
                raise TraceError("the trace has no prompts",
                                 "give prompts to model.trace(...) or to tracer.invoke(...)",
                                 location=user_location())
            for cache in self._caches:
                cache.read_final_sites()
            check_one_request(self._caches, emit.shares_values(self.recording))
            self._run()
        finally:
            self.closed = True
        _push_values(frame)
        return False

    def _plans(self):
        """The recording's plans and compiled programs, cached per code location: the `with`
        line keeps the plans of its last few recordings, keyed by everything emission reads
        (the prompt count, the statements: text, prompts, step and line; the params' shapes
        and dtypes), so a block that records the same statements again reuses them and only
        rebinds params and prompts (docs/Python.md, "Tracing cached per code location")."""
        recording = self.recording
        key = (len(self.prompts), tuple(recording.statements),
               tuple((name, tuple(t.shape), t.dtype) for name, t in recording.params.items()))
        cache = self.model._programs_at.setdefault(self._location, OrderedDict())
        known = cache.get(key)
        if known is not None:
            cache.move_to_end(key)
            self.reused = True
            return known
        llm = self.model.llm
        plans = emit.plan(recording, len(self.prompts))
        compiled = []
        for plan in plans:
            try:
                compiled.append(llm.compile(plan.source))
            except CompileError as error:
                self.program_sources = [p.source for p in plans[:len(compiled) + 1]]
                raise _located(error, plan) from None
        cache[key] = (plans, compiled)
        if len(cache) > _PROGRAMS_PER_LOCATION:
            cache.popitem(last=False)
        return plans, compiled

    def _run(self):
        llm = self.model.llm
        plans, compiled = self._plans()
        self.program_sources = [plan.source for plan in plans]
        self.programs = list(compiled)
        self.program_params = [plan.bind(self.recording.params) for plan in plans]
        values = {}
        saves_by_slot = {}
        completions = {}
        max_tokens = self._steps if self._generating else 0
        for plan, program in zip(plans, compiled):
            invokes = len(plan.requests[0]) > 1 or program.trace()["invokes"] > 1
            prompts = [[self.prompts[s] for s in request] if invokes
                       else self.prompts[request[0]] for request in plan.requests]
            results = llm.generate(prompts, program, plan.bind(self.recording.params),
                                   max_tokens=max_tokens,
                                   use_tqdm=False, **self._sampling)
            for request, names, result in zip(plan.requests, plan.names, results):
                if result.error:
                    raise RuntimeError("the traced program failed while running: %s\n%s"
                                       % (result.error, plan.source))
                for slot, completion in zip(request, result.outputs):
                    completions[slot] = completion
                saves_by_slot.update((slot, result.saves) for slot in request)
                for key, name in names.items():
                    if key.startswith("$s"):
                        values[(key, tuple(request))] = (name, result.saves)
        for proxy in self.saved:
            proxy._resolve([self._saved_value(values, save) for save in proxy._save_names])
        for result in self._result_saves:
            result._value = self._result_tensor(completions)
        for cache in self._caches:
            cache.resolve(saves_by_slot)

    def _saved_value(self, values, save):
        key, slots, step = save
        for (name_key, request), (name, saves) in values.items():
            if name_key == key and (not slots or slots <= set(request)):
                return saves[name if step is None else "%s.%d" % (name, step)]
        raise RuntimeError("internal: save %s was not emitted" % key)

    def _result_tensor(self, completions):
        """[B, prompt + generated] as transformers' generate gives it: prompts padded on the
        left to the longest, completions on the right, with the end-of-sequence id."""
        pad = (self.model.tokenizer.eos_token_ids or [0])[0]
        done = [completions[s] for s in range(len(self.prompts))]
        prompt_width = max(len(c.prompt_token_ids) for c in done)
        width = max(len(c.token_ids) for c in done)
        rows = [[pad] * (prompt_width - len(c.prompt_token_ids)) + list(c.prompt_token_ids)
                + list(c.token_ids) + [pad] * (width - len(c.token_ids)) for c in done]
        return torch.tensor(rows, dtype=torch.int64)


def _located(error, plan):
    """A compile error of emitted nns, at the user's line that made the statement."""
    match = _NNS_LINE.search(str(error))
    location = plan.lines.get(int(match.group(1))) if match else None
    message = match.group(2) if match else str(error).splitlines()[0]
    traced = TraceError("nns rejects the traced code: %s" % message,
                        "the emitted program (tracer.program_source):\n" + plan.source,
                        location=location or user_location())
    traced.diagnostics = str(error)
    return traced


def _push_values(frame):
    """Replaces saved proxies in the frame running the `with` (and in its lists and dicts) by
    their tensors, as nnsight leaves tensors in the variables after a trace."""
    changed = False
    variables = frame.f_locals  # one snapshot: each f_locals access re-reads the fast locals
    for name, value in list(variables.items()):
        new = _replaced(value)
        if new is not value:
            variables[name] = new
            changed = True
    # A function's variables live in fast locals that the f_locals snapshot does not write
    # back before Python 3.13 (where f_locals writes through and this call is gone).
    locals_to_fast = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)
    if changed and frame.f_code.co_flags & inspect.CO_NEWLOCALS and locals_to_fast:
        locals_to_fast(ctypes.py_object(frame), ctypes.c_int(0))


def _replaced(value, depth=0):
    if isinstance(value, (Proxy, ResultValue)):
        return value._value if value._saved and value._value is not _UNSET else value
    if depth > 2:
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _replaced(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            value[key] = _replaced(item, depth + 1)
    elif isinstance(value, tuple) and any(isinstance(v, Proxy) for v in value):
        return type(value)(_replaced(v, depth + 1) for v in value) \
            if type(value) is tuple else value
    return value

"""What every traced operation shares: turning its arguments into proxies (proxy.py explains
parts), lining the parts of several values up prompt by prompt, and binding each computed part
to a local at once, so it holds what the operation computed at that point of the code."""

import functools
import math

import torch

from .errors import TraceError
from .proxy import _UNSET, Part, Proxy, _literal, _meta, _torch_call


def tracer_of(values):
    for value in values:
        if isinstance(value, Proxy):
            return value._tracer
        if isinstance(value, (list, tuple)):
            found = tracer_of(value)
            if found is not None:
                return found
    return None


def resolved(value):
    """A proxy's value once its trace ran (so saved proxies keep working as tensors)."""
    if isinstance(value, Proxy) and value._value is not _UNSET:
        return value._value
    if isinstance(value, (list, tuple)):
        return type(value)(resolved(v) for v in value)
    return value


def any_resolved(values):
    return any(isinstance(v, Proxy) and v._value is not _UNSET for v in values)


def operand(tracer, value):
    """`value` as a proxy: proxies as they are, Python numbers as literals, torch tensors as
    params of the program."""
    if isinstance(value, Proxy):
        if value._tracer is not tracer:
            raise TraceError("a value of another trace is used here",
                             "values exist only inside the trace that made them; save it "
                             "there and pass the tensor")
        return value
    if isinstance(value, float) and not math.isfinite(value):
        value = torch.tensor(value)  # nns has no literal for inf or nan: a param holds it
    if isinstance(value, (bool, int, float)):
        dtype = torch.bool if isinstance(value, bool) else (
            torch.int64 if isinstance(value, int) else torch.float32)
        return Proxy(tracer, [Part(_literal(value), _meta((), dtype), text=_literal(value))],
                     split=False)
    if isinstance(value, torch.Tensor):
        tensor = value.detach().to("cpu")
        if tensor.dtype == torch.bool:
            tensor = tensor.float()
        elif tensor.is_floating_point():
            tensor = tensor.float()
        else:
            tensor = tensor.long()
        name = tracer.recording.param(tensor)
        return Proxy(tracer, [Part(name, _meta(tensor.shape, tensor.dtype), text=name)],
                     split=False)
    raise TraceError("a %s cannot be used in a traced operation" % type(value).__name__,
                     "use torch tensors, Python numbers or traced values")


def compute(tracer, expr, inputs, meta):
    """Binds `expr` (reading the parts `inputs`) to a new local at the current step."""
    recording = tracer.recording
    for part in inputs:
        recording.check_step(part.step)
    slots = frozenset().union(*[p.slots for p in inputs]) if inputs else frozenset()
    name = recording.local()
    recording.emit("%s = %s" % (name, expr), slots, recording.step)
    return Part(name, meta, slots, recording.step, text=name)


def part_count(proxies):
    counts = {len(p._parts) for p in proxies if p._split}
    if len(counts) > 1:
        raise TraceError("batch sizes %s do not match" % sorted(counts),
                         "index the prompts you mean (x[0], x[1:]) so the batches agree")
    return counts.pop() if counts else None


def _index_part(proxy, index):
    """Part `index` of the first dimension of a proxy that is not split. A torch tensor's row
    becomes a param of its own, so prompts given different rows still share one program (each
    request passes its row)."""
    part = proxy._parts[0]
    params = proxy._tracer.recording.params
    if part.text in params:
        name = proxy._tracer.recording.param(params[part.text][index])
        return Part(name, part.meta[index], text=name)
    text = proxy._read(part)
    return Part("%s[%d]" % (text, index), part.meta[index], part.slots, part.step,
                text="%s[%d]" % (text, index))


def aligned(proxy, index, rank, count):
    """The part of `proxy` that goes with part `index` of a split value of `count` parts and
    `rank` dimensions (batch included): its own part when split, the shared value when it has
    fewer dimensions (it broadcasts against each prompt's part), row `index` (or its only row)
    when its first dimension lines up with the batch."""
    if proxy._split:
        if len(proxy._parts) != count:
            raise TraceError("batch sizes %d and %d do not match" % (len(proxy._parts), count),
                             "index the prompts you mean (x[0], x[1:]) so the batches agree")
        return proxy._parts[index]
    own = proxy._parts[0].meta.dim()
    if own < rank:
        return proxy._parts[0]
    if own > rank:
        raise TraceError("a value of %d dimensions against a batched value of %d: its extra "
                         "leading dimensions would mix the prompts" % (own, rank),
                         "index or reshape it to at most the batched value's dimensions")
    size = proxy._parts[0].meta.shape[0]
    if size not in (1, count):
        raise TraceError("a first dimension of %d against a batch of %d" % (size, count),
                         "give one row per prompt, or one row for all")
    return _index_part(proxy, 0 if size == 1 else index)


def bound_text(tracer, part):
    """The local holding `part` at the current step (a view of a site is read first)."""
    tracer.recording.check_step(part.step)
    return tracer.bind(part)


def elementwise(tracer, proxies, build, meta_fn):
    """Applies `build(texts) -> expr` part by part over `proxies` (aligned on the batch)."""
    n = part_count(proxies)
    if n is None:
        parts = [p._parts[0] for p in proxies]
        meta = _torch_call(meta_fn, *[p.meta for p in parts])
        return Proxy(tracer, [compute(tracer, build([bound_text(tracer, p) for p in parts]),
                                      parts, meta)], split=False)
    rank = max(p._rank for p in proxies)
    out = []
    for i in range(n):
        parts = [aligned(p, i, rank, n) for p in proxies]
        meta = _torch_call(meta_fn, *[p.meta for p in parts])
        out.append(compute(tracer, build([bound_text(tracer, p) for p in parts]), parts, meta))
    return Proxy(tracer, out, split=True)


def part_dim(proxy, dim, what):
    """`dim` of the full value (batch included) as a dimension of each part."""
    rank = proxy._rank
    if not -rank <= dim < rank:
        raise TraceError("%s: dimension %d is out of range for a value of %d dimensions"
                         % (what, dim, rank))
    if dim < 0:
        return dim  # counted from the end: the same in every part
    if proxy._split:
        if dim == 0:
            raise TraceError("%s over the batch dimension" % what,
                             "index the prompts (x[0]) or save the values and combine them "
                             "after the trace")
        return dim - 1
    return dim


def per_part(proxy, build, meta_fn):
    """A per-part operation of one proxy: build(text) -> expr, meta_fn(meta) -> meta."""
    tracer = proxy._tracer
    tracer.check_open("this operation")
    out = []
    for part in proxy._parts:
        meta = _torch_call(meta_fn, part.meta)
        out.append(compute(tracer, build(bound_text(tracer, part)), [part], meta))
    return Proxy(tracer, out, split=proxy._split)


def resolving(method):
    """Runs the torch method on the value once the trace has run."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self._value is not _UNSET:
            return getattr(self._value, method.__name__[len("method_"):])(
                *resolved(args), **kwargs)
        self._tracer.check_open("." + method.__name__[len("method_"):] + "()")
        return method(self, *args, **kwargs)
    return wrapper

"""The operations that select, rearrange or write elements rather than compute new ones:
indexing, writes into sites, views (unsqueeze, view, reshape, transpose) and torch.cat /
torch.stack. A view of a site stays a view (writable, read when used); of a computed value it is
computed at once."""

import torch

from .errors import TraceError
from .operands import (aligned, bound_text, compute, elementwise, operand, part_dim,
                       resolved, resolving, tracer_of)
from .proxy import _UNSET, Part, Proxy, _torch_call


def _view_part(proxy, part, suffix, meta_fn):
    """A view of `part` (indexing, view, transpose...): a site view stays writable and is read
    when used; a computed value is read at once."""
    meta = _torch_call(meta_fn, part.meta)
    lvalue = part.lvalue + suffix if part.lvalue is not None else None
    if part.text is None:
        return Part(part.expr + suffix, meta, part.slots, part.step, lvalue=lvalue)
    tracer = proxy._tracer
    new = compute(tracer, part.text + suffix, [part], meta)
    new.lvalue = lvalue
    return new


def _view(proxy, suffix, meta_fn):
    parts = [_view_part(proxy, p, suffix, meta_fn) for p in proxy._parts]
    return Proxy(proxy._tracer, parts, proxy._split, site=proxy._site)


# --- indexing -------------------------------------------------------------------------------

def _index_text(proxy, item):
    if item is None:
        return "None"
    if isinstance(item, bool):
        raise TraceError("indexing with a bool", "use a tensor condition with torch.where")
    if isinstance(item, int):
        return str(item)
    if isinstance(item, slice):
        for bound in (item.start, item.stop, item.step):
            if bound is not None and not isinstance(bound, int):
                raise TraceError("a slice bound that is not a Python int",
                                 "nns slices have bounds known when tracing")
        text = "%s:%s" % ("" if item.start is None else item.start,
                          "" if item.stop is None else item.stop)
        if item.step is not None:
            text += ":%d" % item.step
        return text
    if isinstance(item, Proxy):
        if item._split or item._parts[0].meta.dim() != 0 or item.dtype != torch.int64:
            raise TraceError("indexing with a traced tensor that is not one integer",
                             "index with an integer scalar (x[i] with i = y.argmax()); "
                             "boolean masks and index lists are not in nns: use torch.where")
        return bound_text(proxy._tracer, item._parts[0])
    if isinstance(item, (list, tuple, torch.Tensor)):
        raise TraceError("indexing with a list or tensor of indices",
                         "nns takes integers, slices and None; index each position and "
                         "torch.stack the results")
    raise TraceError("indexing with a %s" % type(item).__name__)


def _meta_index(item):
    return 0 if isinstance(item, Proxy) else item  # an integer scalar drops its dimension


def getitem(proxy, key):
    if proxy._value is not _UNSET:
        return proxy._value[resolved(key)]
    proxy._tracer.check_open("indexing")
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        at = key.index(Ellipsis)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        key = key[:at] + (slice(None),) * (proxy._rank - used) + key[at + 1:]
    parts, split = proxy._parts, proxy._split
    if split and key:
        first, key = key[0], key[1:]
        if isinstance(first, int) and not isinstance(first, bool):
            if not -len(parts) <= first < len(parts):
                raise TraceError("batch index %d is out of range for %d prompts"
                                 % (first, len(parts)))
            parts, split = [parts[first]], False
        elif isinstance(first, slice):
            parts = parts[first]
            if not parts:
                raise TraceError("the batch slice selects no prompt")
        else:
            raise TraceError("this index on the batch dimension",
                             "the batch dimension takes an integer or a slice: x[0], x[:], "
                             "x[1:3]")
        for dim in proxy._token_dims:
            if len(key) > dim:
                _check_token_index(key[dim])
    picked = Proxy(proxy._tracer, parts, split, site=proxy._site)
    if not key:
        return picked
    suffix = "[%s]" % ", ".join(_index_text(picked, k) for k in key)
    meta_key = tuple(_meta_index(k) for k in key)
    return _view(picked, suffix, lambda m: m[meta_key])


def _check_token_index(item):
    counts_from_start = (isinstance(item, int) and item >= 0) or (
        isinstance(item, slice) and ((item.start is not None and item.start >= 0)
                                     or (item.stop is not None and item.stop >= 0)))
    if counts_from_start:
        raise TraceError(
            "a token position counted from the start, in a batch of prompts of different "
            "lengths", "nnsight pads such a batch on the left, so the position would mean a "
            "different token there than here, where each prompt has its own positions; count "
            "from the end (x[:, -1]), or put prompts of one length in an invoke")


# --- writes ---------------------------------------------------------------------------------

_BROADCASTS = {}  # (shape, shape) -> torch.broadcast_shapes of them: a write per prompt and step


def _broadcast(a, b):
    shape = _BROADCASTS.get((a, b))
    if shape is None:
        try:
            shape = _BROADCASTS[(a, b)] = torch.broadcast_shapes(a, b)
        except RuntimeError as error:
            raise TraceError("the value does not fit the target: %s" % error) from None
    return shape


def write(target, value, op):
    """`target op value` for a target that is a site or a view of one, part by part."""
    tracer = target._tracer
    tracer.check_open("a write")
    value = operand(tracer, value)
    rank = target._rank
    for i, part in enumerate(target._parts):
        if part.lvalue is None:
            raise TraceError("a write to a computed value",
                             "nns writes model values (module .output/.input and views of "
                             "them); write the site itself, or compute a new value")
        if target._split:
            source = aligned(value, i, rank, len(target._parts))
        elif value._split:
            raise TraceError("a batched value written into one prompt's value",
                             "index the prompt you mean on the right (v[0])")
        else:
            source = value._parts[0]
        shape = _broadcast(source.meta.shape, part.meta.shape)
        if shape != part.meta.shape:
            raise TraceError("a value of shape %s does not fit a target of shape %s"
                             % (list(source.meta.shape), list(part.meta.shape)))
        tracer.recording.check_step(part.step, "the written value")
        text = bound_text(tracer, source)
        tracer.recording.emit("%s %s %s" % (part.lvalue, op, text), part.slots | source.slots,
                              tracer.recording.step)


# --- views ----------------------------------------------------------------------------------

@resolving
def method_unsqueeze(self, dim):
    rank = self._rank + 1
    d = dim + rank if dim < 0 else dim
    if self._split and d == 0:
        raise TraceError("unsqueeze(0) before the batch dimension",
                         "index the prompts first (x[0].unsqueeze(0))")
    dim_in_part = d - 1 if self._split else d
    return _view(self, ".unsqueeze(%d)" % dim_in_part, lambda m: m.unsqueeze(dim_in_part))


def _sizes(args):
    sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) \
        else args
    for s in sizes:
        if not isinstance(s, int):
            raise TraceError("a view size that is not a Python int",
                             "sizes are known when tracing; use -1 for the token dimension")
    return list(sizes)


def _reshaping(name):
    @resolving
    def method(self, *args):
        sizes = _sizes(args)
        if self._split:
            if not sizes or sizes[0] not in (len(self._parts), -1):
                raise TraceError("%s that does not keep the batch dimension first" % name,
                                 "keep it: x.%s(%d, ...)" % (name, len(self._parts)))
            sizes = sizes[1:]
        text = ".%s(%s)" % (name, ", ".join(map(str, sizes)))
        return _view(self, text, lambda m: m.reshape(sizes))
    method.__name__ = "method_" + name
    return method


method_view = _reshaping("view")
method_reshape = _reshaping("reshape")


@resolving
def method_transpose(self, dim0, dim1, _from_T=False):
    if _from_T and self._rank != 2:
        raise TraceError(".T of a value of %d dimensions" % self._rank,
                         "use x.transpose(a, b)")
    a, b = part_dim(self, dim0, "transpose"), part_dim(self, dim1, "transpose")
    return _view(self, ".transpose(%d, %d)" % (a, b), lambda m: m.transpose(a, b))


METHODS = ("unsqueeze", "view", "reshape", "transpose")


# --- sequences ------------------------------------------------------------------------------

def join(function, values, dim=0):
    """torch.cat / torch.stack of proxies (and tensors). Along the batch dimension they join the
    prompts' parts; elsewhere they join part by part."""
    if not values:
        raise TraceError("%s of an empty list" % function)
    tracer = tracer_of(values)
    tracer.check_open(function)
    proxies = [operand(tracer, v) for v in values]
    if any(p._split for p in proxies):
        rank = max(p._rank for p in proxies) + (1 if function == "stack" else 0)
        d = dim + rank if dim < 0 else dim
        if d == 0:
            if function == "stack" or not all(p._split for p in proxies):
                raise TraceError("%s along the batch dimension of batched values" % function,
                                 "torch.cat([a, b]) joins batches; stack prompts' values "
                                 "after indexing them (torch.stack([x[0], x[1]]))")
            return Proxy(tracer, [p for proxy in proxies for p in proxy._parts], split=True)
        dim_in_part = d - 1
    else:
        dim_in_part = dim
        if function == "stack" and (dim == 0 or dim == -(proxies[0]._rank + 1)):
            # Stacking whole values makes a new first dimension: keep them as parts, so a
            # stack of prompts' values is a batch again.
            return Proxy(tracer, [p._parts[0] for p in proxies], split=True)
    meta_fn = getattr(torch, function)
    return elementwise(
        tracer, proxies, lambda t: "%s([%s], %d)" % (function, ", ".join(t), dim_in_part),
        lambda *m: meta_fn(list(m), dim_in_part))

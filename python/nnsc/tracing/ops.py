"""The torch operations a proxy records, each lowered to nns text part by part (proxy.py
explains parts). Every computed value is bound to a local at once, so it holds what the
operation computed at that point of the code."""

import functools
import math

import torch

from .errors import TraceError
from .proxy import _UNSET, Part, Proxy, _literal, _meta, _torch_call


# --- operands -------------------------------------------------------------------------------

def _tracer_of(values):
    for value in values:
        if isinstance(value, Proxy):
            return value._tracer
        if isinstance(value, (list, tuple)):
            found = _tracer_of(value)
            if found is not None:
                return found
    return None


def _resolved(value):
    """A proxy's value once its trace ran (so saved proxies keep working as tensors)."""
    if isinstance(value, Proxy) and value._value is not _UNSET:
        return value._value
    if isinstance(value, (list, tuple)):
        return type(value)(_resolved(v) for v in value)
    return value


def _any_resolved(values):
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


def _part_count(proxies):
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


def _aligned(proxy, index, rank, count):
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


def _text(tracer, part):
    tracer.recording.check_step(part.step)
    return tracer.bind(part)


def _elementwise(tracer, proxies, build, meta_fn):
    """Applies `build(texts) -> expr` part by part over `proxies` (aligned on the batch)."""
    n = _part_count(proxies)
    if n is None:
        parts = [p._parts[0] for p in proxies]
        meta = _torch_call(meta_fn, *[p.meta for p in parts])
        return Proxy(tracer, [compute(tracer, build([_text(tracer, p) for p in parts]), parts,
                                      meta)], split=False)
    rank = max(p._rank for p in proxies)
    out = []
    for i in range(n):
        parts = [_aligned(p, i, rank, n) for p in proxies]
        meta = _torch_call(meta_fn, *[p.meta for p in parts])
        out.append(compute(tracer, build([_text(tracer, p) for p in parts]), parts, meta))
    return Proxy(tracer, out, split=True)


# --- arithmetic -----------------------------------------------------------------------------

_META_BINARY = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.true_divide,
                "@": torch.matmul, "<": torch.lt, "<=": torch.le, ">": torch.gt,
                ">=": torch.ge, "==": torch.eq, "!=": torch.ne}
_PYTHON_BINARY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                  "/": lambda a, b: a / b, "@": lambda a, b: a @ b, "<": lambda a, b: a < b,
                  "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                  ">=": lambda a, b: a >= b, "==": lambda a, b: a == b,
                  "!=": lambda a, b: a != b}


def binary(symbol, a, b):
    if _any_resolved((a, b)):
        return _PYTHON_BINARY[symbol](_resolved(a), _resolved(b))
    tracer = _tracer_of((a, b))
    tracer.check_open("'%s'" % symbol)
    a, b = operand(tracer, a), operand(tracer, b)
    if symbol == "@":
        if b._split or (a._split and a._parts[0].meta.dim() == 0):
            raise TraceError("'@' with a batched right operand",
                             "index the prompt you mean on the right (w[0]) or put the "
                             "batched value on the left")
        for p in (a, b):
            if p._parts[0].meta.dim() > 2:
                raise TraceError("'@' of a value with more than 2 dimensions per prompt",
                                 "nns's '@' takes 1-d and 2-d operands; reshape first")
    return _elementwise(tracer, [a, b], lambda t: "(%s %s %s)" % (t[0], symbol, t[1]),
                        _META_BINARY[symbol])


def unary(symbol, a):
    if _any_resolved((a,)):
        return -_resolved(a)
    return _elementwise(a._tracer, [a], lambda t: "(%s%s)" % (symbol, t[0]), torch.neg)


def power(a, exponent):
    if _any_resolved((a,)):
        return _resolved(a) ** exponent
    if exponent == 2:
        return binary("*", a, a)
    if exponent == 0.5:
        return call("sqrt", a)
    if exponent == 1:
        return a
    raise TraceError("x ** %r is not in nns" % (exponent,),
                     "write x * x for a square, x.sqrt() for a square root")


def inplace(symbol, target, value):
    """`x op= v`: writes through x when it is a site (or a view of one), else rebinds."""
    if _any_resolved((target,)):
        return _PYTHON_BINARY[symbol](_resolved(target), _resolved(value))
    if all(p.lvalue is not None for p in target._parts) and symbol != "@":
        write(target, value, symbol + "=")
        return target
    return binary(symbol, target, value)


def call(function, *args):
    """`function(args...)` part by part, nns's function-call form (float results, but for
    `abs` and `not`, which keep their type)."""
    tracer = _tracer_of(args)
    tracer.check_open(function + "()")
    proxies = [operand(tracer, a) for a in args]
    keeps_type = function in ("abs", "not")
    return _elementwise(tracer, proxies, lambda t: "%s(%s)" % (function, ", ".join(t)),
                        lambda *m: m[0] if keeps_type else m[0].float())


# --- dimensions -----------------------------------------------------------------------------

def _part_dim(proxy, dim, what):
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


def _per_part(proxy, build, meta_fn):
    """A per-part operation of one proxy: build(text) -> expr, meta_fn(meta) -> meta."""
    tracer = proxy._tracer
    tracer.check_open("this operation")
    out = []
    for part in proxy._parts:
        meta = _torch_call(meta_fn, part.meta)
        out.append(compute(tracer, build(_text(tracer, part)), [part], meta))
    return Proxy(tracer, out, split=proxy._split)


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


def _resolving(method):
    """Runs the torch method on the value once the trace has run."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self._value is not _UNSET:
            return getattr(self._value, method.__name__[len("method_"):])(
                *_resolved(args), **kwargs)
        self._tracer.check_open("." + method.__name__[len("method_"):] + "()")
        return method(self, *args, **kwargs)
    return wrapper


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
        return _text(proxy._tracer, item._parts[0])
    if isinstance(item, (list, tuple, torch.Tensor)):
        raise TraceError("indexing with a list or tensor of indices",
                         "nns takes integers, slices and None; index each position and "
                         "torch.stack the results")
    raise TraceError("indexing with a %s" % type(item).__name__)


def _meta_index(item):
    return 0 if isinstance(item, Proxy) else item  # an integer scalar drops its dimension


def getitem(proxy, key):
    if proxy._value is not _UNSET:
        return proxy._value[_resolved(key)]
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
            source = _aligned(value, i, rank, len(target._parts))
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
        text = _text(tracer, source)
        tracer.recording.emit("%s %s %s" % (part.lvalue, op, text), part.slots | source.slots,
                              tracer.recording.step)


# --- methods --------------------------------------------------------------------------------

def _dim_arg(args, kwargs, position=0, default=_UNSET):
    if "dim" in kwargs:
        return kwargs["dim"]
    if len(args) > position:
        return args[position]
    return default


def _softmax(function):
    @_resolving
    def method(self, *args, **kwargs):
        dim = _dim_arg(args, kwargs, 0, None)
        if dim is None:
            raise TraceError("%s without dim" % function, "say the dimension: "
                             "x.%s(dim=-1)" % function)
        d = _part_dim(self, dim, function)
        return _per_part(self, lambda t: "%s(%s, %d)" % (function, t, d),
                         lambda m: getattr(torch, function)(m, d))
    method.__name__ = "method_" + function
    return method


method_softmax = _softmax("softmax")
method_log_softmax = _softmax("log_softmax")


def _reduction_args(function, args, kwargs):
    """(dim, keepdim) of a reduction as torch takes them; norm's first argument is p."""
    if function == "norm":
        p = kwargs.get("p", args[0] if args else 2)
        if p not in (2, 2.0, "fro", None):
            raise TraceError("norm with p=%r" % (p,),
                             "nns's norm is the 2-norm; write x.abs().sum(-1) for p=1")
        args = args[1:]
    dim = kwargs.get("dim", args[0] if args else None)
    keepdim = kwargs.get("keepdim", args[1] if len(args) > 1 else False)
    if isinstance(dim, (tuple, list)):
        raise TraceError("%s over several dimensions" % function,
                         "reduce one dimension at a time")
    return dim, bool(keepdim)


def _meta_reduction(function, meta, dim, keepdim):
    """The shape and dtype torch gives `function` over `dim` (None: every dimension)."""
    if function == "norm":
        return torch.linalg.vector_norm(meta, dim=dim, keepdim=keepdim)
    if function in ("max", "min") and dim is not None:
        function = "a" + function  # amax/amin: the values alone
    if dim is None:
        dims = tuple(range(meta.dim()))
        if function in ("argmax", "argmin"):
            result = getattr(torch, function)(meta)
            return result.reshape([1] * meta.dim()) if keepdim else result
        if function in ("max", "min"):
            return getattr(torch, "a" + function)(meta, dim=dims, keepdim=keepdim)
        return getattr(torch, function)(meta, dim=dims, keepdim=keepdim) if dims else \
            getattr(torch, function)(meta)
    return getattr(torch, function)(meta, dim=dim, keepdim=keepdim)


def _reduction(function):
    @_resolving
    def method(self, *args, **kwargs):
        dim, keepdim = _reduction_args(function, args, kwargs)
        if self._split and (dim is None or dim in (0, -self._rank)):
            return _reduce_batch(self, function, dim, keepdim)
        keep = "keepdim=true" if keepdim else ""
        if dim is None:
            return _per_part(self, lambda t: "%s.%s(%s)" % (t, function, keep),
                             lambda m: _meta_reduction(function, m, None, keepdim))
        d = _part_dim(self, dim, function)
        result = _per_part(self, lambda t: "%s.%s(%s)" % (
            t, function, ", ".join(x for x in (str(d), keep) if x)),
            lambda m: _meta_reduction(function, m, d, keepdim))
        if function in ("max", "min"):
            # torch's max(dim) is (values, indices); nns's gives the values, argmax the indices.
            indices = getattr(self, "arg" + function)(dim, keepdim=keepdim)
            return getattr(torch.return_types, function)((result, indices))
        return result
    method.__name__ = "method_" + function
    return method


def _reduce_batch(proxy, function, dim, keepdim):
    """sum or mean over the batch (or over everything, batch included): the parts added up."""
    if function not in ("sum", "mean"):
        raise TraceError("%s over the batch dimension" % function,
                         "index the prompts (x[0]) or save the values and combine them after "
                         "the trace")
    parts = proxy._parts if dim is not None else [
        getattr(Proxy(proxy._tracer, [p], False), function)()._parts[0] for p in proxy._parts]
    tracer = proxy._tracer
    texts = [_text(tracer, p) for p in parts]
    expr = "(%s)" % " + ".join(texts)
    if function == "mean":
        expr = "(%s / %d)" % (expr, len(parts))
    meta = parts[0].meta.float() if function == "mean" else parts[0].meta
    result = Proxy(tracer, [compute(tracer, expr, parts, meta)], split=False)
    return result.unsqueeze(0) if keepdim and dim is not None else result


method_sum = _reduction("sum")
method_mean = _reduction("mean")
method_argmax = _reduction("argmax")
method_argmin = _reduction("argmin")
method_max = _reduction("max")
method_min = _reduction("min")
method_norm = _reduction("norm")


@_resolving
def method_topk(self, k, dim=-1, largest=True, sorted=True):
    if dim not in (-1, self._rank - 1) or not largest:
        raise TraceError("topk along a dimension other than the last, or smallest",
                         "nns's topk takes the k largest along the last dimension")
    values = _per_part(self, lambda t: "topk(%s, %d)" % (t, k),
                       lambda m: torch.topk(m, k).values)
    return _TopK(values)


class _TopK(tuple):
    """torch.topk's (values, indices); nns computes the values only."""

    def __new__(cls, values):
        return super().__new__(cls, (values, None))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        raise TraceError("topk(...).indices", "nns's topk gives the values; for the top index "
                         "use x.argmax(-1)")

    def __getitem__(self, index):
        if index in (1, -1):
            return self.indices
        return tuple.__getitem__(self, index)


@_resolving
def method_unsqueeze(self, dim):
    rank = self._rank + 1
    d = dim + rank if dim < 0 else dim
    if self._split and d == 0:
        raise TraceError("unsqueeze(0) before the batch dimension",
                         "index the prompts first (x[0].unsqueeze(0))")
    part_dim = d - 1 if self._split else d
    return _view(self, ".unsqueeze(%d)" % part_dim, lambda m: m.unsqueeze(part_dim))


def _sizes(args):
    sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) \
        else args
    for s in sizes:
        if not isinstance(s, int):
            raise TraceError("a view size that is not a Python int",
                             "sizes are known when tracing; use -1 for the token dimension")
    return list(sizes)


def _reshaping(name):
    @_resolving
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


@_resolving
def method_transpose(self, dim0, dim1, _from_T=False):
    if _from_T and self._rank != 2:
        raise TraceError(".T of a value of %d dimensions" % self._rank,
                         "use x.transpose(a, b)")
    a, b = _part_dim(self, dim0, "transpose"), _part_dim(self, dim1, "transpose")
    return _view(self, ".transpose(%d, %d)" % (a, b), lambda m: m.transpose(a, b))


@_resolving
def method_float(self):
    return _per_part(self, lambda t: "%s.float()" % t, lambda m: m.float())


@_resolving
def method_clone(self):
    return _per_part(self, lambda t: t, lambda m: m)


@_resolving
def method_detach(self):
    return self


@_resolving
def method_cpu(self):
    return self


@_resolving
def method_to(self, *args, **kwargs):
    dtype = kwargs.get("dtype", next((a for a in args if isinstance(a, torch.dtype)), None))
    if dtype in (None, torch.float32):
        return self if dtype is None else method_float(self)
    raise TraceError("conversion to %s" % dtype, "nns computes in float32 (.float())")


def _function_method(function):
    @_resolving
    def method(self, *args, **kwargs):
        if args or kwargs:
            raise TraceError("%s with arguments" % function)
        return call(function, self)
    method.__name__ = "method_" + function
    return method


UNARY_FUNCTIONS = ("exp", "log", "sqrt", "relu", "tanh", "sigmoid", "abs")
for _name in UNARY_FUNCTIONS:
    globals()["method_" + _name] = _function_method(_name)


@_resolving
def method_pow(self, exponent):
    return power(self, exponent)


@_resolving
def method_clamp(self, min=None, max=None):
    bounds = ", ".join(b for b in (("min=" + _literal(min)) if min is not None else "",
                                   ("max=" + _literal(max)) if max is not None else "") if b)
    return _per_part(self, lambda t: "clamp(%s, %s)" % (t, bounds),
                     lambda m: m.clamp(min=min, max=max).float())


METHODS = ("softmax", "log_softmax", "sum", "mean", "argmax", "argmin", "max", "min", "norm",
           "topk", "unsqueeze", "view", "reshape", "transpose", "float", "clone", "detach",
           "cpu", "to", "pow", "clamp") + UNARY_FUNCTIONS


# --- sequences ------------------------------------------------------------------------------

def join(function, values, dim=0):
    """torch.cat / torch.stack of proxies (and tensors). Along the batch dimension they join the
    prompts' parts; elsewhere they join part by part."""
    if not values:
        raise TraceError("%s of an empty list" % function)
    tracer = _tracer_of(values)
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
        part_dim = d - 1
    else:
        part_dim = dim
        if function == "stack" and (dim == 0 or dim == -(proxies[0]._rank + 1)):
            # Stacking whole values makes a new first dimension: keep them as parts, so a
            # stack of prompts' values is a batch again.
            return Proxy(tracer, [p._parts[0] for p in proxies], split=True)
    meta_fn = getattr(torch, function)
    return _elementwise(
        tracer, proxies, lambda t: "%s([%s], %d)" % (function, ", ".join(t), part_dim),
        lambda *m: meta_fn(list(m), part_dim))


def where(condition, a, b):
    tracer = _tracer_of((condition, a, b))
    tracer.check_open("torch.where")
    proxies = [operand(tracer, v) for v in (condition, a, b)]
    return _elementwise(tracer, proxies, lambda t: "where(%s, %s, %s)" % tuple(t),
                        lambda c, x, y: torch.where(c.bool(), x, y))

"""Proxies: what envoy values are inside a trace. Each torch operation on a proxy is lowered at
once to nns statements (recording.py) for every prompt it concerns.

A proxy whose first dimension is the batch (a site value, `[B, T, ...]`) is *split*: it holds
one part per prompt, each the nns value of that prompt alone (`[T, ...]`, as nns sites have no
batch dimension). Indexing the first dimension picks parts (`output[0]` is prompt 0's part,
`output[:, -1]` every part's last token); the other operations apply part by part, with their
`dim` arguments shifted past the batch. A proxy that is not split has one part. Shapes are
tracked with torch meta tensors of each prompt's own size, so a shape error is torch's, raised
at the user's line."""

import operator

import torch

from .errors import TraceError

_UNSET = object()


class Part:
    """One prompt's share of a proxy. `expr`: nns text that reads it; `text`: the local it is
    bound to (None while it is an unread view of a site); `lvalue`: the site (or view of one) a
    write to it updates, if any; `slots`: the prompts it depends on; `step`: the generation
    step it was made at; `meta`: a meta tensor of its shape and dtype."""

    __slots__ = ("expr", "text", "lvalue", "slots", "step", "meta")

    def __init__(self, expr, meta, slots=frozenset(), step=None, text=None, lvalue=None):
        self.expr, self.meta, self.slots, self.step = expr, meta, frozenset(slots), step
        self.text, self.lvalue = text, lvalue


# (shape, dtype) -> a meta tensor: shared, as nothing writes to meta tensors (operations make
# new ones), and making one costs several microseconds, times every prompt of every operation.
_METAS = {}


def _meta(shape, dtype=torch.float32):
    key = (tuple(shape), dtype)
    meta = _METAS.get(key)
    if meta is None:
        meta = _METAS[key] = torch.empty(shape, dtype=dtype, device="meta")
    return meta


def _literal(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


# (function, its closure's values, argument shapes and dtypes) -> (result shape, dtype): torch's
# meta kernels run in Python and cost about a millisecond, and a traced loop repeats the same
# few operations on the same shapes.
_SHAPES = {}


def _torch_call(fn, *args):
    """fn on meta tensors: a meta tensor of the result's shape and dtype, or torch's own error
    as a TraceError."""
    try:
        key = (getattr(fn, "__code__", fn),
               tuple(cell.cell_contents for cell in getattr(fn, "__closure__", None) or ()),
               tuple((a.shape, a.dtype) for a in args))
        known = _SHAPES.get(key)
    except (TypeError, ValueError):  # an unhashable or empty closure cell: no cache
        key = known = None
    if known is not None:
        return _meta(*known)
    try:
        result = fn(*args)
    except (RuntimeError, IndexError, ValueError, TypeError) as error:
        raise TraceError("torch rejects this operation on the traced shapes: %s" % error) \
            from None
    if key is not None:
        _SHAPES[key] = (result.shape, result.dtype)
    return result


class Proxy:
    """A traced tensor: a site value or something computed from site values."""

    __hash__ = object.__hash__

    def __init__(self, tracer, parts, split, site=None, token_dims=()):
        self._tracer = tracer
        self._parts = list(parts)
        self._split = split
        self._site = site            # the site path of a value read straight from a site
        # In a site value of prompts of different lengths, the token dimensions of each part
        # (T, and S of attention patterns: their positions from the start differ from
        # nnsight's left-padded ones).
        self._token_dims = token_dims
        self._saved = False
        self._value = _UNSET
        if any(p.text is None for p in self._parts):
            tracer.recording.pending(self)

    # --- shape --------------------------------------------------------------------------------

    @property
    def _rank(self):
        return self._parts[0].meta.dim() + (1 if self._split else 0)

    @property
    def shape(self):
        """The shape nnsight would give (with the batch dimension); a token dimension of
        prompts of different lengths is the longest."""
        if self._value is not _UNSET:
            return self._value.shape
        if not self._split:
            return self._parts[0].meta.shape
        sizes = [list(p.meta.shape) for p in self._parts]
        return torch.Size([len(sizes)] + [max(s) for s in zip(*sizes)])

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    @property
    def dtype(self):
        return self._parts[0].meta.dtype

    @property
    def ndim(self):
        return self.dim()

    # --- reading and binding ------------------------------------------------------------------

    def _bind_all(self):
        for part in self._parts:
            self._tracer.bind(part)

    def _read(self, part):
        """The nns text of `part` used at the current point (bound first if it is a view)."""
        self._tracer.recording.check_step(part.step)
        return self._tracer.bind(part)

    # --- saving -------------------------------------------------------------------------------

    def save(self):
        """Saves this value: after the trace the variable holds a torch tensor shaped as
        nnsight's (the batch dimension included)."""
        self._tracer.check_open("save()")
        if not self._saved:
            self._saved = True
            self._save_names = [self._tracer.save_part(self, part) for part in self._parts]
            self._tracer.saved.append(self)
        return self

    def _resolve(self, values):
        self._value = stacked(values) if self._split else values[0]

    # --- Python conversions that need a value ------------------------------------------------

    def _concrete(self, what, hint):
        if self._value is not _UNSET:
            return self._value
        if self._tracer.closed:
            raise TraceError("this value was not saved in its trace, so it has no value",
                             "call .save() on it inside the trace")
        raise TraceError("%s needs the value, which exists only when the program runs" % what,
                         hint)

    def __bool__(self):
        return bool(self._concrete(
            "a Python `if`/`while`/`and`/`or` on a traced value",
            "the branch would be chosen while tracing, before the model runs; write the "
            "condition as a tensor: torch.where(cond, a, b), or save the value and decide "
            "after the trace"))

    def item(self):
        return self._concrete(".item()", "keep it a tensor inside the trace (x[0] or "
                              "x.sum()), or save it and call .item() after the trace").item()

    def tolist(self):
        return self._concrete(".tolist()", "save it and call .tolist() after the "
                              "trace").tolist()

    def numpy(self):
        return self._concrete(".numpy()", "save it and call .numpy() after the trace").numpy()

    def __float__(self):
        return float(self._concrete("float(...)", "save it and convert after the trace"))

    def __int__(self):
        return int(self._concrete("int(...)", "save it and convert after the trace"))

    def __index__(self):
        return operator.index(self._concrete(
            "using a traced value as a Python index", "index with the tensor itself (x[i] "
            "with i a traced integer scalar), or save it and index after the trace"))

    def __iter__(self):
        if self._value is not _UNSET:
            return iter(self._value)
        raise TraceError("iterating over a traced value", "index it (x[0], x[1], ...) or use "
                         "`for i in range(n)` with a number you know")

    def __len__(self):
        if self._value is not _UNSET:
            return len(self._value)
        return self.shape[0]

    def __repr__(self):
        if self._value is not _UNSET:
            return repr(self._value)
        return "<nnsc traced value %s>" % list(self.shape)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        value = self.__dict__.get("_value", _UNSET)
        if value is not _UNSET:
            return getattr(value, name)
        raise TraceError("traced values have no attribute or method %r that nnsc can compile"
                         % name, "see docs/Python.md, \"NNsight code\", for the operations "
                         "nnsc supports")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from .torchops import dispatch
        return dispatch(func, args, kwargs or {})

    # --- writes -------------------------------------------------------------------------------

    def __setitem__(self, key, value):
        if self._value is not _UNSET:
            self._value[key] = value
            return
        from . import shapes
        target = shapes.getitem(self, key)
        if isinstance(value, Proxy) and value is not target and _same_place(value, target):
            return  # `x[k] += v` has already written through the view
        shapes.write(target, value, "=")


def stacked(values):
    """Prompts' values as one batch, `[B, ...]`; prompts of different lengths are padded on
    the left, where nnsight's padding goes."""
    shapes = {tuple(v.shape) for v in values}
    if len(shapes) > 1:
        size = [max(s) for s in zip(*shapes)]
        padded = []
        for v in values:
            out = v.new_zeros(size)
            out[tuple(slice(n - m, n) for n, m in zip(size, v.shape))] = v
            padded.append(out)
        values = padded
    return torch.stack(values)


def _same_place(a, b):
    return (len(a._parts) == len(b._parts)
            and all(p.lvalue is not None and p.lvalue == q.lvalue and p.slots == q.slots
                    for p, q in zip(a._parts, b._parts)))


def _install_operators():
    from . import ops, shapes
    binary = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "matmul": "@"}
    for name, symbol in binary.items():
        setattr(Proxy, "__%s__" % name,
                lambda self, other, s=symbol: ops.binary(s, self, other))
        setattr(Proxy, "__r%s__" % name,
                lambda self, other, s=symbol: ops.binary(s, other, self))
        setattr(Proxy, "__i%s__" % name,
                lambda self, other, s=symbol: ops.inplace(s, self, other))
    for name, symbol in {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
                         "ne": "!="}.items():
        setattr(Proxy, "__%s__" % name, lambda self, other, s=symbol: ops.binary(s, self, other))
    Proxy.__neg__ = lambda self: ops.unary("-", self)
    Proxy.__pos__ = lambda self: self
    Proxy.__pow__ = lambda self, exponent: ops.power(self, exponent)
    Proxy.__getitem__ = lambda self, key: shapes.getitem(self, key)
    Proxy.__invert__ = lambda self: ops.call("not", self)
    for name, method in ops.METHODS.items():
        setattr(Proxy, name, method)
    Proxy.T = property(lambda self: shapes.method_transpose(self, -2, -1, _from_T=True))
    Proxy.mT = Proxy.T

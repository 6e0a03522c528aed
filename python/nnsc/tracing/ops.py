"""The operations that compute new values, lowered part by part to nns text: arithmetic, nns's
elementwise functions, softmax, reductions, topk and conversions; and `METHODS`, every tensor
method a proxy has (these and the views of shapes.py)."""

import torch

from . import shapes
from .errors import TraceError
from .operands import (any_resolved, bound_text, compute, elementwise, operand, part_dim,
                       per_part, resolved, resolving, tracer_of)
from .proxy import Proxy, _literal


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
    if any_resolved((a, b)):
        return _PYTHON_BINARY[symbol](resolved(a), resolved(b))
    tracer = tracer_of((a, b))
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
    return elementwise(tracer, [a, b], lambda t: "(%s %s %s)" % (t[0], symbol, t[1]),
                       _META_BINARY[symbol])


def unary(symbol, a):
    if any_resolved((a,)):
        return -resolved(a)
    return elementwise(a._tracer, [a], lambda t: "(%s%s)" % (symbol, t[0]), torch.neg)


def power(a, exponent):
    if any_resolved((a,)):
        return resolved(a) ** exponent
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
    if any_resolved((target,)):
        return _PYTHON_BINARY[symbol](resolved(target), resolved(value))
    if all(p.lvalue is not None for p in target._parts) and symbol != "@":
        shapes.write(target, value, symbol + "=")
        return target
    return binary(symbol, target, value)


def call(function, *args):
    """`function(args...)` part by part, nns's function-call form (float results, but for
    `abs` and `not`, which keep their type)."""
    tracer = tracer_of(args)
    tracer.check_open(function + "()")
    proxies = [operand(tracer, a) for a in args]
    keeps_type = function in ("abs", "not")
    return elementwise(tracer, proxies, lambda t: "%s(%s)" % (function, ", ".join(t)),
                       lambda *m: m[0] if keeps_type else m[0].float())


def where(condition, a, b):
    tracer = tracer_of((condition, a, b))
    tracer.check_open("torch.where")
    proxies = [operand(tracer, v) for v in (condition, a, b)]
    return elementwise(tracer, proxies, lambda t: "where(%s, %s, %s)" % tuple(t),
                       lambda c, x, y: torch.where(c.bool(), x, y))


# --- softmax and reductions -----------------------------------------------------------------

def _dim_arg(args, kwargs, position=0, default=None):
    if "dim" in kwargs:
        return kwargs["dim"]
    if len(args) > position:
        return args[position]
    return default


def _softmax(function):
    @resolving
    def method(self, *args, **kwargs):
        dim = _dim_arg(args, kwargs)
        if dim is None:
            raise TraceError("%s without dim" % function, "say the dimension: "
                             "x.%s(dim=-1)" % function)
        d = part_dim(self, dim, function)
        return per_part(self, lambda t: "%s(%s, %d)" % (function, t, d),
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
    @resolving
    def method(self, *args, **kwargs):
        dim, keepdim = _reduction_args(function, args, kwargs)
        if self._split and (dim is None or dim in (0, -self._rank)):
            return _reduce_batch(self, function, dim, keepdim)
        keep = "keepdim=true" if keepdim else ""
        if dim is None:
            return per_part(self, lambda t: "%s.%s(%s)" % (t, function, keep),
                            lambda m: _meta_reduction(function, m, None, keepdim))
        d = part_dim(self, dim, function)
        result = per_part(self, lambda t: "%s.%s(%s)" % (
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
    texts = [bound_text(tracer, p) for p in parts]
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


@resolving
def method_topk(self, k, dim=-1, largest=True, sorted=True):
    if dim not in (-1, self._rank - 1) or not largest:
        raise TraceError("topk along a dimension other than the last, or smallest",
                         "nns's topk takes the k largest along the last dimension")
    values = per_part(self, lambda t: "topk(%s, %d)" % (t, k),
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


# --- conversions and elementwise functions --------------------------------------------------

@resolving
def method_float(self):
    return per_part(self, lambda t: "%s.float()" % t, lambda m: m.float())


@resolving
def method_clone(self):
    return per_part(self, lambda t: t, lambda m: m)


@resolving
def method_detach(self):
    return self


@resolving
def method_cpu(self):
    return self


@resolving
def method_to(self, *args, **kwargs):
    dtype = kwargs.get("dtype", next((a for a in args if isinstance(a, torch.dtype)), None))
    if dtype in (None, torch.float32):
        return self if dtype is None else method_float(self)
    raise TraceError("conversion to %s" % dtype, "nns computes in float32 (.float())")


def _function_method(function):
    @resolving
    def method(self, *args, **kwargs):
        if args or kwargs:
            raise TraceError("%s with arguments" % function)
        return call(function, self)
    method.__name__ = "method_" + function
    return method


UNARY_FUNCTIONS = ("exp", "log", "sqrt", "relu", "tanh", "sigmoid", "abs")
for _name in UNARY_FUNCTIONS:
    globals()["method_" + _name] = _function_method(_name)


@resolving
def method_pow(self, exponent):
    return power(self, exponent)


@resolving
def method_clamp(self, min=None, max=None):
    bounds = ", ".join(b for b in (("min=" + _literal(min)) if min is not None else "",
                                   ("max=" + _literal(max)) if max is not None else "") if b)
    return per_part(self, lambda t: "clamp(%s, %s)" % (t, bounds),
                    lambda m: m.clamp(min=min, max=max).float())


_OWN_METHODS = ("softmax", "log_softmax", "sum", "mean", "argmax", "argmin", "max", "min",
                "norm", "topk", "float", "clone", "detach", "cpu", "to", "pow",
                "clamp") + UNARY_FUNCTIONS
# Every tensor method a proxy has: name -> its lowering.
METHODS = dict([(name, globals()["method_" + name]) for name in _OWN_METHODS]
               + [(name, getattr(shapes, "method_" + name)) for name in shapes.METHODS])

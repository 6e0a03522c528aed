"""torch functions called with proxies (`torch.softmax(x, -1)`, `steer * x`, `torch.cat`):
`Proxy.__torch_function__` sends them here, to the same lowering as the methods."""

import torch
import torch.nn.functional as F

from . import ops, shapes
from .errors import TraceError
from .operands import resolved
from .proxy import _UNSET, Proxy

_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "true_divide": "/",
           "matmul": "@", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
           "ne": "!=", "__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/",
           "__matmul__": "@", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">=",
           "__eq__": "==", "__ne__": "!="}
_REFLECTED = {"__radd__": "+", "__rsub__": "-", "__rmul__": "*", "__rtruediv__": "/",
              "__rmatmul__": "@"}
_FUNCTIONAL = {F.softmax: "softmax", F.log_softmax: "log_softmax", F.relu: "relu",
               torch.relu: "relu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
               torch.tanh: "tanh", F.tanh: "tanh"}


def _supported_names():
    return sorted(set(_BINARY) - {n for n in _BINARY if n.startswith("__")}
                  | set(ops.METHODS) | {"cat", "stack", "where", "gelu", "silu"})


def dispatch(func, args, kwargs):
    """Lowers one torch function call whose arguments include a proxy."""
    name = getattr(func, "__name__", repr(func))
    if any(isinstance(a, Proxy) and a._value is not _UNSET for a in args):
        return func(*resolved(args), **{k: resolved(v) for k, v in kwargs.items()})
    if name in _BINARY and len(args) == 2 and not kwargs:
        return ops.binary(_BINARY[name], args[0], args[1])
    if name in _REFLECTED and len(args) == 2:
        return ops.binary(_REFLECTED[name], args[1], args[0])
    if name in ("__neg__", "neg"):
        return ops.unary("-", args[0])
    if name in ("__getitem__",):
        return shapes.getitem(args[0], args[1])
    if name == "__setitem__":
        return args[0].__setitem__(args[1], args[2])
    if name in ("cat", "concat", "concatenate", "stack"):
        return shapes.join("stack" if name == "stack" else "cat", list(args[0]),
                           kwargs.get("dim", args[1] if len(args) > 1 else 0))
    if name == "where" and len(args) == 3:
        return ops.where(*args)
    if name in ("gelu", "silu") and isinstance(args[0], Proxy):
        if name == "gelu" and kwargs.get("approximate", "none") != "none":
            raise TraceError("gelu with approximate=%r" % kwargs["approximate"],
                             "nns's gelu is the exact (erf) one")
        return ops.call(name, args[0])
    if func in _FUNCTIONAL and isinstance(args[0], Proxy):
        method = getattr(args[0], _FUNCTIONAL[func])
        return method(*args[1:], **{k: v for k, v in kwargs.items() if k != "dtype"})
    if name in ops.METHODS and args and isinstance(args[0], Proxy):
        return getattr(args[0], name)(*args[1:], **kwargs)
    raise TraceError("torch function '%s' has no nns equivalent" % name,
                     "nnsc compiles these on traced values: %s"
                     % ", ".join(_supported_names()))

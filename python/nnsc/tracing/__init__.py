"""NNsight code, compiled: `nnsc.LanguageModel` records NNsight 0.8 code written against envoys
(`model.model.layers[i].output`, `.save()`, `tracer.invoke`, `tracer.iter`, `tracer.cache()`)
and runs it as an nns program in the engine (docs/Python.md, "NNsight code").

    envoy.py      the module tree and its accessors
    proxy.py      traced values (one part per prompt) and their Python protocol
    operands.py   what every operation shares: operands, parts lined up by prompt
    shapes.py     indexing, writes, views, cat and stack
    ops.py        arithmetic, functions, softmax and reductions, conversions
    torchops.py   torch functions called on traced values
    recording.py  the statements, params and saves of a trace
    cache.py      tracer.cache() and its CacheView
    emit.py       the recording as .nns programs and requests
    context.py    model.trace / model.generate, tracer.invoke, tracer.iter; running it
    model.py      LanguageModel
"""

from . import proxy as _proxy
from .errors import TraceError
from .model import LanguageModel

_proxy._install_operators()

__all__ = ["LanguageModel", "TraceError"]

"""nnsc from Python: compiled, checked interpretability experiments in a paged engine.

    import nnsc
    llm = nnsc.LLM()                                   # the bundled SmolLM2-135M
    steer = llm.compile("param steer: f32[hidden]\\n"
                        "trace { for step in steps { layers[12].output += 4.0 * steer } }")
    out = llm.generate(["The capital of France is"], steer, params={"steer": v},
                       max_tokens=8)                  # greedy by default
    out[0].text, out[0].saves

`LLM` runs the engine in this process; `Client` sends the same requests to an `nns-serve`.
See docs/Python.md.
"""

import os as _os
import sys as _sys

# libgomp reads its wait policy once, when torch loads it. LibTorch's spinning OpenMP threads
# slow a shared machine several times over (docs/Performance.md), so, as nns-run and nns-serve
# do, threads wait passively unless the user chose otherwise or torch is already loaded.
if "torch" not in _sys.modules:
    _os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch as _torch  # noqa: F401  (loads LibTorch before the extension, which links it)

from ._extension import _nnsc  # noqa: F401
from .errors import CompileError, ServerError
from .program import Program
from .result import Completion, Result, Saves
from .llm import LLM, Site, Tokenizer
from .client import Client
from .tracing import LanguageModel, TraceError

__all__ = ["LLM", "Client", "Program", "Result", "Completion", "Saves", "Site", "Tokenizer",
           "CompileError", "ServerError", "LanguageModel", "TraceError"]

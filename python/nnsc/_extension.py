"""Finds the C++ extension module `_nnsc`, which the project's CMake build writes to
<build>/python (NNSC_BUILD_DIR, else build/ next to python/): the directory is added to this
package's search path, so the module imports as `nnsc._nnsc` without being copied into the
source tree."""

import os
import sys

_package_path = sys.modules[__package__].__path__

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.environ.get("NNSC_BUILD_DIR") or os.path.join(_ROOT, "build")
_EXT_DIR = os.path.join(BUILD_DIR, "python")
if _EXT_DIR not in _package_path:
    _package_path.append(_EXT_DIR)

try:
    from . import _nnsc  # noqa: E402
except ImportError as e:
    raise ImportError(
        "nnsc's extension module is not built (looked in %s): build it with "
        "`ninja -C %s nnsc_python` (scripts/test builds it), or set NNSC_BUILD_DIR (%s)"
        % (_EXT_DIR, BUILD_DIR, e)) from None

# Where the bundled model and the tools live, for LLM() and the tests.
DEFAULT_MODEL = os.path.join(_ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TOOLS_DIR = os.path.join(BUILD_DIR, "bin")

"""TraceError: NNsight code that cannot become an nns program, located in the user's file."""

import linecache
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIPPED_DIRS = (_PACKAGE_DIR, os.path.dirname(os.path.abspath(__import__("torch").__file__)),
                 os.path.dirname(os.path.abspath(__import__("contextlib").__file__)))


_skipped = {}  # co_filename -> whether its frames are nnsc's, torch's or contextlib's


def user_location():
    """(filename, line) of the innermost frame outside nnsc, torch and the standard library's
    contextlib: the line of the user's code that is being traced."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        skipped = _skipped.get(filename)
        if skipped is None:
            skipped = _skipped[filename] = os.path.abspath(filename).startswith(_SKIPPED_DIRS)
        if not skipped:
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


class TraceError(Exception):
    """NNsight code inside `model.trace(...)` / `model.generate(...)` that nnsc cannot compile.

    `str(e)` is `FILE:LINE: MESSAGE`, the line of code and what to write instead; `filename`,
    `lineno`, `message` and `hint` hold the parts. Raised where the construct is met, or when
    the trace exits for what the compiler finds; either way nothing has run."""

    def __init__(self, message, hint=None, location=None):
        self.filename, self.lineno = location or user_location()
        self.message = message
        self.hint = hint
        text = "%s:%d: %s" % (self.filename, self.lineno, message)
        source = linecache.getline(self.filename, self.lineno).strip()
        if source:
            text += "\n    " + source
        if hint:
            text += "\n" + hint
        super().__init__(text)

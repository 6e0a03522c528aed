"""The exceptions of nnsc beyond Python's own (bad values are ValueError, bad types TypeError)."""


class CompileError(Exception):
    """A program did not compile. `str(e)` and `e.diagnostics` are the compiler's diagnostics as
    nnsc prints them: `FILE:LINE:COL: error: MESSAGE`, the source line and a caret."""

    def __init__(self, diagnostics):
        super().__init__(diagnostics.rstrip("\n"))
        self.diagnostics = diagnostics


class ServerError(RuntimeError):
    """nns-serve refused a request for a reason that is not the request's values (authentication,
    a busy or full server, an unknown route): the HTTP status, OpenAI's error code and message."""

    def __init__(self, status, code, message):
        super().__init__("HTTP %d%s: %s" % (status, " (%s)" % code if code else "", message))
        self.status = status
        self.code = code
        self.message = message

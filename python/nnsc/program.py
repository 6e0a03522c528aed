"""Program: a compiled trace program (a `.nnsb` bundle file) and what its traces take and give."""

import os
import shutil


class Program:
    """A compiled program. Made by `LLM.compile(source_or_path)` or `Program.load(FILE.nnsb)`
    (a bundle from `nnsc -emit=bundle`); checked against a model's architecture when an LLM
    first runs it (or at once with `Program.load(path, llm)`).

    After that check, `traces` describes each trace: its name, invokes, params (name, type,
    required) and saves (name, type, per_step)."""

    def __init__(self, path, source=None, _keep=None):
        self.path = os.fspath(path)
        self.source = source
        self._traces = None
        self._bundle = None  # the _nnsc.Bundle it was checked as
        self._keep = _keep  # the temporary directory of a compiled program's bundle

    @classmethod
    def load(cls, path, llm=None):
        """A program from a bundle file; with `llm`, checked against its model now."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError("no bundle file '%s'" % path)
        program = cls(os.path.abspath(path))
        if llm is not None:
            llm._bundle(program)
        return program

    @property
    def traces(self):
        self._check()
        return self._traces

    def trace(self, name=None):
        """The description of trace `name` (or of the only one), chosen as every front door
        chooses (the runtime's session::Program::findTrace)."""
        self._check()
        return self._bundle.trace(name or "")

    def _check(self):
        if self._bundle is None:
            raise RuntimeError("the program has not been checked against a model yet: "
                               "run it, or load it with Program.load(path, llm)")

    def save(self, path):
        """Copies the bundle to `path` (it can be loaded later with Program.load)."""
        shutil.copyfile(self.path, os.fspath(path))

    def __repr__(self):
        return "Program(%r)" % self.path

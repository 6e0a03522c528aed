"""What a trace records: nns statements, each tied to the prompts it belongs to, the generation
step it runs at and the user's line that made it, and the params (the torch tensors the code
used).

Names inside statements are placeholders (`$v3` a local, `$s2` a save, `$p1` a param) that
emission (emit.py) renames per program in order of first use, so prompts whose programs do the
same thing get the same text and share one compiled program."""

import itertools
import weakref
from typing import FrozenSet, NamedTuple, Optional, Tuple

import torch

from .errors import TraceError, user_location


class Statement(NamedTuple):
    """One nns statement. `slots`: the prompts (indices into the trace's prompts) whose values
    it reads or writes; `step`: None outside `tracer.iter` (the prompt pass), else the
    generation step; `everywhere`: runs for every prompt (tracer.stop()). A tuple, so a
    recording's statements are a key of the program cache as they are (context.py)."""
    text: str
    slots: FrozenSet[int]
    step: Optional[int]
    location: Tuple[str, int]
    everywhere: bool = False


class Recording:
    """The statements and params of one trace, in the order the code made them."""

    def __init__(self):
        self.statements = []
        self.params = {}     # placeholder -> torch.Tensor
        self.step = None     # the generation step being recorded (tracer.iter), None outside
        self.invoke = None   # the prompt slots of the invoke being recorded
        self._ids = itertools.count(1)
        # Proxies with parts read lazily (views of sites), by id: proxies compare elementwise, so
        # they cannot be keys of a set.
        self._pending = weakref.WeakValueDictionary()

    def local(self):
        return "$v%d" % next(self._ids)

    def save_name(self):
        return "$s%d" % next(self._ids)

    def param(self, tensor):
        """The param placeholder holding `tensor`; equal tensors share one (a loop that makes
        `2.0 * steer` at every step passes it once)."""
        for name, existing in self.params.items():
            if existing.shape == tensor.shape and existing.dtype == tensor.dtype \
                    and torch.equal(existing, tensor):
                return name
        name = "$p%d" % next(self._ids)
        self.params[name] = tensor
        return name

    def emit(self, text, slots, step, everywhere=False):
        self.statements.append(Statement(text, frozenset(slots), step, user_location(),
                                         everywhere))

    def check_step(self, step, what="this value"):
        """A value made at generation step `step` is usable at the current step only (or
        anywhere when made in the prompt pass outside tracer.iter)."""
        if step is not None and step != self.step:
            where = "outside tracer.iter" if self.step is None else "at step %d" % self.step
            raise TraceError(
                "%s was computed at generation step %d and is used %s" % (what, step, where),
                "nns computes each step's values in that step; compute it inside the same "
                "`for step in tracer.iter[...]` iteration, or save it there and combine the "
                "saved tensors after the trace")

    # --- lazily read views --------------------------------------------------------------------

    def pending(self, proxy):
        self._pending[id(proxy)] = proxy

    def flush(self, keep_site=None):
        """Reads (binds to locals) every live view of a site that has not been read yet, except
        views of `keep_site`: before another site is touched or the step or invoke changes, so
        each view reads the value its site had when the code took it."""
        for key, proxy in list(self._pending.items()):
            if keep_site is not None and proxy._site == keep_site:
                continue
            proxy._bind_all()
            del self._pending[key]

"""What generate returns: one Result per request, one Completion per prompt of it."""

from dataclasses import dataclass, field
from typing import List, Optional


class Saves(dict):
    """The saves of one request, by name: torch tensors viewing the engine's save memory (no
    copy). Per-step saves are named `NAME.<step>`, `cache(...)` saves by site path, as nns-run
    writes them. A name the program does not save raises a KeyError listing the saved names."""

    def __missing__(self, name):
        raise KeyError("no save %r in this result (saved: %s)"
                       % (name, ", ".join(sorted(self)) or "nothing"))


@dataclass
class Completion:
    """One prompt's run: its tokens, what was generated, and the invoke it ran as."""
    prompt: Optional[str]
    prompt_token_ids: List[int]
    token_ids: List[int]
    text: Optional[str]
    finish_reason: str
    invoke: Optional[str] = None


@dataclass
class Result:
    """One request. `outputs` has one Completion per prompt (one per invoke for a multi-invoke
    trace, in invoke order; none for a request nns-serve refused); `text`, `token_ids` and
    `prompt_token_ids` are the first's.
    `finish_reason` is "stop", "length", "abort", or "error" when the program failed while
    running, with the engine's message in `error` (the other requests are not affected).
    `saves` (a Saves dict) is made on first access: a run whose saves are not read pays
    nothing for them."""
    index: int
    outputs: List[Completion]
    finish_reason: str
    error: Optional[str] = None
    _saves: object = field(default=None, repr=False)  # a Saves, or a callable giving the dict

    @property
    def saves(self):
        if not isinstance(self._saves, Saves):
            self._saves = Saves(self._saves() if self._saves is not None else {})
        return self._saves

    @property
    def text(self):
        return self.outputs[0].text if self.outputs else None

    @property
    def token_ids(self):
        return self.outputs[0].token_ids if self.outputs else []

    @property
    def prompt_token_ids(self):
        return self.outputs[0].prompt_token_ids if self.outputs else []

    def __repr__(self):
        saves = ", ".join("%s%s" % (k, list(v.shape)) for k, v in sorted(self.saves.items()))
        return ("Result(index=%d, text=%r, finish_reason=%r, saves={%s}%s)"
                % (self.index, self.text, self.finish_reason, saves,
                   ", error=%r" % self.error if self.error else ""))

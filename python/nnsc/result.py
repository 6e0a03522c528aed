"""What generate returns: one Result per request, one Completion per prompt of it."""

import re
from dataclasses import dataclass, field
from typing import List, Optional


def natural_key(name):
    """Sort key that orders the numbers in a name by value: `layers.2` before `layers.10`,
    `top.9` before `top.10` (plain sorting puts "10" before "2")."""
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", name))]


class Saves(dict):
    """The saves of one request, by name: torch tensors viewing the engine's save memory (no
    copy), in natural order (`x.2` before `x.10`). Per-step saves are named `NAME.<step>`,
    `cache(...)` saves by site path, as nns-run writes them. Integer saves (argmax, token ids,
    `result`) are int64 tensors. A name the program does not save raises a KeyError listing the
    saved names."""

    def __init__(self, saves=()):
        super().__init__(sorted(dict(saves).items(), key=lambda item: natural_key(item[0])))

    def __missing__(self, name):
        raise KeyError("no save %r in this result (saved: %s)"
                       % (name, ", ".join(self) or "nothing"))


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
    trace, in invoke order; none for a request nns-serve refused), and `invokes` the same
    Completions by invoke name.
    `text`, `token_ids`, `prompt_token_ids` and `finish_reason` are the last prompt's: with
    invokes, the last invoke is the one that can read the others' values (patching's corrupt
    run, ActAdd's steered target), so its text is the result of the experiment.
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
    def invokes(self):
        """{invoke name: Completion} in invoke order; empty for a request without invokes."""
        return {o.invoke: o for o in self.outputs if o.invoke is not None}

    @property
    def text(self):
        return self.outputs[-1].text if self.outputs else None

    @property
    def token_ids(self):
        return self.outputs[-1].token_ids if self.outputs else []

    @property
    def prompt_token_ids(self):
        return self.outputs[-1].prompt_token_ids if self.outputs else []

    def __repr__(self):
        saves = ", ".join("%s%s" % (k, list(v.shape)) for k, v in self.saves.items())
        invokes = ", ".join("%s=%r" % (name, o.text) for name, o in self.invokes.items())
        return ("Result(index=%d, text=%r, %sfinish_reason=%r, saves={%s}%s)"
                % (self.index, self.text, "invokes={%s}, " % invokes if invokes else "",
                   self.finish_reason, saves, ", error=%r" % self.error if self.error else ""))

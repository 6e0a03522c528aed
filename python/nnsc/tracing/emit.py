"""Emission: a trace's recording becomes `.nns` source text.

Prompts that exchange no values run as separate requests, one per prompt, and prompts whose
programs come out the same share one program (so a batch with `output[:, -1]` is one program
run for every prompt). When a value of one prompt reaches another's (patching across invokes,
a stack of several prompts' values), all prompts become the invokes of one request, in order.
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

_PLACEHOLDER = re.compile(r"\$([vsp])(\d+)")
_BINDS = re.compile(r"^(\$[vs]\d+) = ")


@dataclass
class Plan:
    """One program and the requests that run it. `requests`: for each request the prompts it
    runs (one prompt; or every prompt, as invokes); `names`: for each request its placeholders'
    emitted names; `param_keys`: for each request its params' emitted names -> placeholders
    (what `bind` fills from a recording); `lines`: emitted line number -> the user's (file,
    line)."""
    source: str
    requests: List[List[int]]
    names: List[Dict[str, str]] = field(default_factory=list)
    param_keys: List[Dict[str, str]] = field(default_factory=list)
    lines: Dict[int, Tuple[str, int]] = field(default_factory=dict)

    def bind(self, params):
        """Each request's params ({emitted name: tensor}) from a recording's `params`."""
        return [{name: params[key] for name, key in keys.items()} for keys in self.param_keys]


class _Writer:
    """Renames placeholders in order of first use and keeps the line map."""

    def __init__(self):
        self.names = {}
        self.counts = {}
        self.lines = []       # (text, location or None)

    def rename(self, text):
        def replace(match):
            key = match.group(0)
            if key not in self.names:
                kind = match.group(1)
                self.counts[kind] = self.counts.get(kind, 0) + 1
                self.names[key] = "%s%d" % (kind, self.counts[kind])
            return self.names[key]
        return _PLACEHOLDER.sub(replace, text)

    def alias(self, key, same_as):
        """`key` is emitted as `same_as` is (a step merged into a loop over several steps)."""
        self.names[key] = self.names[same_as]

    def add(self, text, location=None):
        self.lines.append((text, location))


def _blocks(statements):
    """Runs of consecutive statements of one step: [(step, [Statement])]."""
    blocks = []
    for statement in statements:
        if blocks and blocks[-1][0] == statement.step:
            blocks[-1][1].append(statement)
        else:
            blocks.append((statement.step, [statement]))
    return blocks


def _canonical(block):
    """A block's text with the names it binds numbered within the block, and those names: two
    steps that do the same thing have the same canonical text."""
    bound = []
    for statement in block:
        match = _BINDS.match(statement.text)
        if match:
            bound.append(match.group(1))
    local = {key: "#%d" % i for i, key in enumerate(bound)}
    text = "\n".join(s.text for s in block)
    return _PLACEHOLDER.sub(lambda m: local.get(m.group(0), m.group(0)), text), bound


def _body(writer, statements, indent):
    """Statements outside tracer.iter at the top; each step's in `for step in steps[k]`, and
    consecutive steps that do the same thing in one `for step in steps[a:b]`."""
    pad = "  " * indent
    blocks = _blocks(statements)
    i = 0
    while i < len(blocks):
        step, block = blocks[i]
        if step is None:
            for statement in block:
                writer.add(pad + writer.rename(statement.text), statement.location)
            i += 1
            continue
        canonical, bound = _canonical(block)
        end = i + 1
        while end < len(blocks) and blocks[end][0] == step + (end - i) \
                and _canonical(blocks[end][1])[0] == canonical:
            end += 1
        steps = "%d" % step if end == i + 1 else "%d:%d" % (step, step + end - i)
        writer.add(pad + "for step in steps[%s] {" % steps)
        for statement in block:
            writer.add(pad + "  " + writer.rename(statement.text), statement.location)
        writer.add(pad + "}")
        for _, later in blocks[i + 1:end]:
            for key, same_as in zip(_canonical(later)[1], bound):
                writer.alias(key, same_as)
        i = end


def _finish(writer, params, requests, header=""):
    used = {key: name for key, name in writer.names.items() if key.startswith("$p")}
    lines = ["# nns emitted by nnsc.LanguageModel from NNsight code" + header]
    for key, name in sorted(used.items(), key=lambda item: int(item[1][1:])):
        tensor = params[key]
        element = "i64" if not tensor.is_floating_point() else "f32"
        shape = "[%s]" % ", ".join(str(d) for d in tensor.shape) if tensor.dim() else ""
        lines.append("param %s: %s%s" % (name, element, shape))
    lines.append("trace {")
    line_map = {}
    for text, location in writer.lines:
        lines.append("  " + text)
        if location is not None:
            line_map[len(lines)] = location
    lines.append("}")
    return Plan("\n".join(lines) + "\n", requests, [dict(writer.names) for _ in requests],
                [{name: key for key, name in used.items()} for _ in requests], line_map)


def shares_values(recording):
    """Whether a value of one prompt reaches another's: then the prompts are one request."""
    return any(len(s.slots) > 1 for s in recording.statements)


def plan(recording, prompt_count):
    """The programs that run a recording over `prompt_count` prompts."""
    statements = recording.statements
    if shares_values(recording):
        return [_invokes(recording, prompt_count)]
    # Each prompt's statements, in order, in one pass (a filter per prompt would be quadratic).
    own = [[] for _ in range(prompt_count)]
    every = range(prompt_count)
    for statement in statements:
        for slot in every if statement.everywhere or not statement.slots else statement.slots:
            own[slot].append(statement)
    plans = {}
    for slot in range(prompt_count):
        writer = _Writer()
        _body(writer, own[slot], 0)
        single = _finish(writer, recording.params, [[slot]])
        existing = plans.get(single.source)
        if existing is None:
            plans[single.source] = single
        else:
            existing.requests += single.requests
            existing.names += single.names
            existing.param_keys += single.param_keys
    return list(plans.values())


def _invokes(recording, prompt_count):
    """One request whose invokes are the prompts; a statement goes to the invoke of the last
    prompt it reads, where the values of the earlier ones are available."""
    own = [[] for _ in range(prompt_count)]
    for statement in recording.statements:
        if statement.everywhere:
            for slot in range(prompt_count):
                own[slot].append(statement)
        else:
            own[max(statement.slots) if statement.slots else 0].append(statement)
    writer = _Writer()
    for slot in range(prompt_count):
        writer.add("invoke p%d {" % slot)
        _body(writer, own[slot], 1)
        writer.add("}")
    return _finish(writer, recording.params, [list(range(prompt_count))],
                   " (one request, one invoke per prompt)")

"""`tracer.cache()`: NNsight 0.8.1's record of module outputs (and inputs) over a run, as nns's
declarative `cache(...)` statement, which saves each listed site under its path with the value
the model continues with (after the program's writes there) and does not order the program.

`model.trace` caches the prompt pass; `model.generate` caches every generation step (the
statement inside `for step in steps[0:N]`), one entry per step, as nnsight does. `lm_head` in
`model.trace` is every position, which the engine does not compute: it is read from the final
norm's output when the block ends, as `model.lm_head.output` is (context.py)."""

import difflib
import re

from .envoy import Envoy, EnvoyList, inputs_of, output_of
from .errors import TraceError, user_location
from .proxy import stacked

# nnsight names modules from the wrapper, which it calls "model": its `model.model.layers.0` is
# nnsc's `model.layers.0`.
_ROOT = "model"
_LAYER_SITE = re.compile(r"^model\.layers\.(\d+)\.(.*)$")


def nnsight_path(envoy):
    """nnsight's name of an envoy (the LanguageModel, a module or a module list)."""
    return _ROOT + "." + envoy._path if envoy._path else _ROOT


class Entry:
    """One visit of a module (one generation step): its `output`, its `inputs` as
    `(args, kwargs)` and `input`, the first of them; None where not cached."""

    __slots__ = ("output", "inputs")

    def __init__(self, output=None, inputs=None):
        self.output = output
        self.inputs = inputs

    @property
    def input(self):
        if self.inputs is None:
            return None
        args, kwargs = self.inputs
        values = list(args) + list(kwargs.values())
        return values[0] if values else None


def _envoys(model):
    """Every envoy and envoy list of the tree, by nnsight path."""
    found = {_ROOT: model}
    pending = list(model._children.values())
    while pending:
        node = pending.pop()
        found[nnsight_path(node)] = node
        pending.extend(node if isinstance(node, EnvoyList) else node._children.values())
    return found


def _module(envoys, item):
    """The envoy `item` (an envoy of this model or its nnsight path) names, one with sites."""
    if isinstance(item, (Envoy, EnvoyList)):
        path = nnsight_path(item)
        if envoys.get(path) is not item:
            raise TraceError("tracer.cache(modules=...) with a module of another model")
    elif isinstance(item, str):
        path = item
        if path not in envoys:
            close = difflib.get_close_matches(path, list(envoys), n=3)
            raise TraceError("tracer.cache(modules=...) names no module %r" % path,
                             "paths are nnsight's, from the wrapper: 'model.model.layers.3.mlp'"
                             + ("; did you mean %s?" % " or ".join(map(repr, close))
                                if close else ""))
    else:
        raise TraceError("tracer.cache(modules=...) takes envoys or path strings, not %s"
                         % type(item).__name__)
    node = envoys[path]
    if isinstance(node, EnvoyList):
        raise TraceError("tracer.cache(modules=...) with the module list %s" % path,
                         "nothing calls a module list; pass its modules: "
                         "list(model.model.layers)")
    if not node._sites:
        raise TraceError("nns has no site for the input or output of %s, so it cannot be "
                         "cached" % path, "cache its submodules, or lm_head for the logits")
    return node


def _patterns(sites, layer_count):
    """cache(...)'s arguments for `sites`: `model.layers[*].X` where every layer's X is there."""
    layers_of = {}
    for site in sites:
        match = _LAYER_SITE.match(site)
        if match:
            layers_of.setdefault(match.group(2), set()).add(match.group(1))
    out = []
    for site in sites:
        match = _LAYER_SITE.match(site)
        if match and len(layers_of[match.group(2)]) == layer_count:
            site = "model.layers[*]." + match.group(2)
        if site not in out:
            out.append(site)
    return out


class Cache:
    """One `tracer.cache(...)`: the modules it keeps, the prompts it covers (the invoke's), and
    after the run, `entries`: nnsight path -> [Entry], one per step."""

    def __init__(self, tracer, modules, include_output, include_inputs, device, dtype):
        if tracer.recording.step is not None:
            raise TraceError("tracer.cache() inside tracer.iter",
                             "declare it before the loop: it records every generation step")
        self._tracer = tracer
        self._convert = dict(device=device, dtype=dtype) \
            if device is not None or dtype is not None else None
        self.slots = list(tracer._invoke_slots())
        self.location = user_location()
        self.entries = {}
        self.ran = False
        kinds = ["output"] * bool(include_output) + ["input"] * bool(include_inputs)
        self._modules = self._ordered(self._selected(modules), kinds)
        self._sites = [envoy._sites[kind] for envoy in self._modules for kind in kinds
                       if kind in envoy._sites]
        self._final = {}  # site -> saved proxy, for sites read when the block ends
        self._emit()

    def _selected(self, modules):
        envoys = _envoys(self._tracer.model)
        if modules is None:
            return [node for node in envoys.values()
                    if isinstance(node, Envoy) and node._path and node._sites]
        return [_module(envoys, item) for item in modules]

    def _ordered(self, modules, kinds):
        """The modules in nnsight's order: by the first of their cached sites to fire."""
        order = {site: i for i, site in enumerate(self._tracer.model._site_info)}
        firing = {}
        for envoy in modules:
            sites = [order[envoy._sites[k]] for k in kinds if k in envoy._sites]
            if sites:
                firing[envoy] = min(sites)
        return sorted(firing, key=firing.get)

    def _read_at_end(self, site):
        """lm_head's sites in model.trace: every position, which nns's cache does not hold."""
        return site.startswith("lm_head.") and not self._tracer._generating

    def _emit(self):
        tracer = self._tracer
        steps = range(tracer._steps) if tracer._generating else [None]
        layer_count = len({match.group(1) for match in map(_LAYER_SITE.match,
                                                            tracer.model._site_info) if match})
        for slot in self.slots:
            done = tracer._cached_sites.setdefault(slot, set())
            sites = [s for s in self._sites if s not in done and not self._read_at_end(s)]
            done.update(sites)
            if not sites:
                continue
            text = "cache(%s)" % ", ".join(_patterns(sites, layer_count))
            for step in steps:
                tracer.recording.emit(text, {slot}, step)

    def read_final_sites(self):
        """Saves the sites read when the block ends (none after a tracer.stop(), which ends the
        forward pass before lm_head, as in nnsight)."""
        recording = self._tracer.recording
        if any(s.text == "stop()" for s in recording.statements):
            return
        invoke = recording.invoke
        recording.invoke = self.slots
        try:
            for site in self._sites:
                if self._read_at_end(site):
                    self._final[site] = self._tracer.site(site).save()
        finally:
            recording.invoke = invoke

    def resolve(self, saves_by_slot):
        """Fills `entries` from each prompt's saves once the program ran: one entry per step
        every prompt reached; none for a module no step reached."""
        steps = range(self._tracer._steps) if self._tracer._generating else [None]
        for envoy in self._modules:
            entries = []
            for step in steps:
                entry = self._entry(envoy, step, saves_by_slot)
                if entry is None:
                    break
                entries.append(entry)
            if entries:
                self.entries[nnsight_path(envoy)] = entries
        self.ran = True

    def _entry(self, envoy, step, saves_by_slot):
        values = {}
        for kind in ("output", "input"):
            site = envoy._sites.get(kind)
            if site in self._sites:
                values[kind] = self._value(site, step, saves_by_slot)
                if values[kind] is None:
                    return None
        output, first = values.get("output"), values.get("input")
        return Entry(output_of(envoy._path, output) if output is not None else None,
                     inputs_of(envoy._path, first) if first is not None else None)

    def _value(self, site, step, saves_by_slot):
        if site in self._final:
            value = self._final[site]._value
        else:
            name = site if step is None else "%s.%d" % (site, step)
            saves = [saves_by_slot[slot] for slot in self.slots]
            if not all(name in s for s in saves):
                return None
            value = stacked([s[name] for s in saves])
        return value.to(**self._convert) if self._convert else value


def check_one_request(caches, shares_values):
    """nns saves a cached site once per request: a trace whose prompts exchange values is one
    request, so its caches may cover one prompt."""
    if not shares_values:
        return
    slots = {slot for cache in caches for slot in cache.slots}
    if len(slots) > 1:
        raise TraceError("tracer.cache() of several prompts in a trace whose prompts exchange "
                         "values", "nnsc runs such a trace as one request, where a cached site "
                         "is saved once: cache inside the invoke of one prompt, or .save() the "
                         "values", location=caches[0].location)


class CacheView:
    """What `tracer.cache()` returns, as nnsight's: after the trace,
    `cache["model.model.layers.0"].output` by nnsight path, or by navigation,
    `cache.model.model.layers[0].output`; `.inputs` and `.input` likewise; a list, one value
    per step, where the module ran at several generation steps. `keys()`, `in`, `len()`."""

    def __init__(self, cache, node, path=None):
        object.__setattr__(self, "_cache", cache)
        object.__setattr__(self, "_node", node)  # an Envoy or EnvoyList; None at the root
        object.__setattr__(self, "_path", path)  # a cached path reached without navigation

    def _node_path(self):
        if self._path is not None:
            return self._path
        return nnsight_path(self._node) if self._node is not None else None

    def _entries(self):
        cache = self._cache
        if not cache.ran:
            raise TraceError("the cache is read inside its trace",
                             "it fills when the trace runs: read it after the `with` block")
        path = self._node_path()
        if path is None:
            raise KeyError("the cache root is not a module")
        if path in cache.entries:
            return cache.entries[path]
        if isinstance(self._node, Envoy) and not self._node._sites:
            raise TraceError("nnsc cached no value of %s: nns has no site for it" % path,
                             "read its submodules, or lm_head for the logits")
        raise KeyError("%r was not cached" % path)

    def _values(self, attribute):
        values = [getattr(entry, attribute) for entry in self._entries()]
        return values[0] if len(values) == 1 else values

    @property
    def output(self):
        return self._values("output")

    @property
    def inputs(self):
        return self._values("inputs")

    @property
    def input(self):
        return self._values("input")

    def keys(self):
        """The cached module paths at or below this view's module (all, at the root)."""
        prefix = self._node_path()
        return [key for key in self._cache.entries
                if prefix is None or key == prefix or key.startswith(prefix + ".")]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return CacheView(self._cache, self._child(name))

    def __getitem__(self, key):
        if isinstance(key, int):
            if not isinstance(self._node, EnvoyList):
                raise TypeError("%s is not a module list" % self._node_path())
            return CacheView(self._cache, self._node[key])
        if "." not in key:
            return CacheView(self._cache, self._child(key))
        if key in self._cache.entries:
            return CacheView(self._cache, None, path=key)
        view = CacheView(self._cache, None)
        for name in key.split("."):
            view = CacheView(self._cache, view._child(name))
        return view

    def __contains__(self, key):
        try:
            path = self[key]._node_path()
        except (AttributeError, IndexError, KeyError, TraceError):
            return False
        return path is not None and path in self._cache.entries

    def __len__(self):
        return len(self._entries())

    def __repr__(self):
        path = self._node_path()
        return "CacheView(%s, cached=%s)" % ("root" if path is None else repr(path),
                                             self.keys())

    def _child(self, name):
        """One path component: at the root `model` is the model itself and any other name a
        child of it; a number indexes a module list."""
        node = self._node
        model = self._cache._tracer.model
        if node is None:
            if name == _ROOT:
                return model
            node = model
        if isinstance(node, EnvoyList):
            if name.lstrip("-").isdigit():
                return node[int(name)]
        elif name in node._children:
            return node._children[name]
        raise AttributeError("%s has no module %r" % (nnsight_path(node), name))

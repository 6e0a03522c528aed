"""Envoys: the Hugging Face module tree of the loaded model, rebuilt from `llm.sites()`, with
NNsight 0.8's accessors (`.output`, `.input`, `.skip(value)`, calling a module)."""

import difflib

from .errors import TraceError

# Modules whose forward returns a tuple in transformers (attn_output, attn_weights): nnsight's
# `.output` is that tuple, so the value is `.output[0]`.
_TUPLE_OUTPUTS = ("self_attn",)
# Modules nns cannot call on a value (they need the cache and positions of a running sequence).
_NOT_CALLABLE = ("self_attn",)
# Modules to which transformers passes their first input by keyword, so nnsight's `.inputs`
# holds it among the keyword arguments: that keyword.
_KEYWORD_INPUTS = {"self_attn": "hidden_states"}
# NNsight 0.8's `.source` path from an attention block to eager attention's softmax, whose
# output is the site nns calls `self_attn.pattern`.
_PATTERN_SOURCE = ("attention_interface_1", "source", "nn_functional_softmax_0")


class Envoy:
    """One module of the model: `path` is its Hugging Face name (`model.layers.3.mlp`)."""

    def __init__(self, model, path, children, sites):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_children", children)  # name -> Envoy or EnvoyList
        object.__setattr__(self, "_sites", sites)        # accessor -> site path

    def __repr__(self):
        return "Envoy(%s)" % (self._path or "<root>")

    def _tracer(self, what):
        return self._model._active_tracer(what)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        children = self.__dict__["_children"]
        if name in children:
            return children[name]
        sites = self.__dict__["_sites"]
        if name in sites:
            value = self._tracer(".%s" % name).site(sites[name])
            return output_of(self._path, value) if name == "output" else value
        if name == "inputs" and "input" in sites:
            return inputs_of(self._path, self._tracer(".inputs").site(sites["input"]))
        if name == "source" and "pattern" in sites:
            return SourceEnvoy(self, sites["pattern"])
        known = sorted(children) + sorted(sites) + ["inputs"] * ("input" in sites) + ["skip"]
        close = difflib.get_close_matches(name, known, n=3)
        if name == "inputs":
            hint = "nns has no input of %s; its submodules' inputs are sites" % (
                self._path or "the model")
        elif name == "source":
            hint = ("of the operations inside a module's forward, nnsc has eager attention's "
                    "softmax: self_attn.source.attention_interface_1.source."
                    "nn_functional_softmax_0.output")
        else:
            hint = "%s has: %s" % (self._path or "the model", ", ".join(known))
            if close:
                hint = "did you mean %s? " % " or ".join(repr(c) for c in close) + hint
        raise TraceError("%s has no attribute %r" % (self._path or "the model", name), hint)

    def __setattr__(self, name, value):
        sites = self.__dict__["_sites"]
        if name == "inputs" and "input" in sites:
            name, value = "input", first_input(self._path, value)
        if name not in sites:
            raise TraceError("cannot set %r on %s" % (name, self._path or "the model"),
                             "write a module's .output or .input")
        tracer = self._tracer(".%s = ..." % name)
        leaf = self._path.rsplit(".", 1)[-1]
        if name == "output" and leaf in _TUPLE_OUTPUTS:
            if not isinstance(value, tuple):
                raise TraceError("%s.output is a tuple (output, weights)" % self._path,
                                 "write its first element: %s.output[0][:] = value" % leaf)
            value = value[0]
        tracer.assign(sites[name], value)

    def skip(self, value):
        """The module does not run; its output is `value` (inner sites never fire)."""
        if "output" not in self._sites:
            raise TraceError("%s cannot be skipped" % (self._path or "the model"))
        self._tracer(".skip()").skip(self._path, self._sites["output"], value)

    def __call__(self, value, *args, **kwargs):
        if args or kwargs:
            raise TraceError("calling %s with more than one argument" % self._path,
                             "nns module calls take one value: module(x)")
        leaf = self._path.rsplit(".", 1)[-1]
        if leaf in _NOT_CALLABLE or leaf.isdigit() or "output" not in self._sites \
                or "input" not in self._sites:
            raise TraceError("%s cannot be called on a value" % (self._path or "the model"),
                             "nns calls norms, projections, MLPs, activations and lm_head; "
                             "decoder layers and attention blocks need a running sequence")
        return self._tracer("calling %s" % self._path).call_module(
            self._path, self._sites["input"], self._sites["output"], value)


class InputKwargs(dict):
    """The keyword arguments of nnsight's `.inputs`. nns has a module's first input only, so
    asking for another (the attention mask, positions, the KV cache) is a TraceError."""

    def __init__(self, path, values=()):
        super().__init__(values)
        self.path = path

    def __missing__(self, key):
        raise TraceError("nnsc has no input %r of %s" % (key, self.path),
                         "nns sites hold a module's first input only (.input); the attention "
                         "mask, positions and KV cache stay inside the engine")


def output_of(path, value):
    """nnsight's `.output` of module `path` whose nns value is `value`: `(value, None)` where
    transformers returns a tuple (attention output, weights)."""
    return (value, None) if path.rsplit(".", 1)[-1] in _TUPLE_OUTPUTS else value


def inputs_of(path, value):
    """nnsight's `.inputs`, `(args, kwargs)`, of module `path` whose first input is `value`:
    `((value,), {})`, or `((), {keyword: value})` where transformers passes it by keyword."""
    keyword = _KEYWORD_INPUTS.get(path.rsplit(".", 1)[-1])
    if keyword:
        return (), InputKwargs(path, {keyword: value})
    return (value,), InputKwargs(path)


def first_input(path, inputs):
    """The value of `module.inputs = (args, kwargs)`: nns writes the first input, so the pair
    must hold that one value (positional, or under the module's keyword)."""
    if not (isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[1], dict)):
        raise TraceError("%s.inputs takes a pair (args, kwargs)" % path,
                         "write .inputs = ((value,), kwargs), or .input = value")
    args, kwargs = inputs
    keyword = _KEYWORD_INPUTS.get(path.rsplit(".", 1)[-1])
    hint = "nns writes a module's first input only: write .input = value"
    if len(args) + len(kwargs) != 1:
        raise TraceError("%s.inputs written with %d inputs" % (path, len(args) + len(kwargs)),
                         hint)
    if kwargs and keyword not in kwargs:
        raise TraceError("%s.inputs written with the keyword input %r" % (path, *kwargs), hint)
    return args[0] if args else kwargs[keyword]


class SourceEnvoy:
    """A step along `self_attn.source.attention_interface_1.source.nn_functional_softmax_0`,
    NNsight's way to the attention probabilities; its `.output` is nns's `self_attn.pattern`,
    `[B, heads, T, S]` (S: the positions attended to). No other `.source` operation exists."""

    def __init__(self, envoy, site, depth=0):
        object.__setattr__(self, "_envoy", envoy)
        object.__setattr__(self, "_site", site)
        object.__setattr__(self, "_depth", depth)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        depth = self._depth
        if depth < len(_PATTERN_SOURCE) and name == _PATTERN_SOURCE[depth]:
            return SourceEnvoy(self._envoy, self._site, depth + 1)
        if depth == len(_PATTERN_SOURCE) and name == "output":
            return self._envoy._tracer(".output").site(self._site)
        expected = _PATTERN_SOURCE[depth] if depth < len(_PATTERN_SOURCE) else "output"
        raise TraceError("nnsc has no source operation %r here" % name,
                         "the attention probabilities are self_attn.source."
                         "attention_interface_1.source.nn_functional_softmax_0.output (next: "
                         "%r)" % expected)

    def __setattr__(self, name, value):
        if self._depth != len(_PATTERN_SOURCE) or name != "output":
            raise TraceError("cannot set %r here" % name,
                             "write nn_functional_softmax_0.output")
        self._envoy._tracer(".output = ...").assign(self._site, value)


class EnvoyList:
    """A ModuleList (`model.layers`): indexing, negative indices, len and iteration."""

    def __init__(self, path, items):
        self._path = path
        self._items = items

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._items[index]
        try:
            return self._items[index]
        except IndexError:
            raise TraceError("%s has %d modules; index %d is out of range"
                             % (self._path, len(self._items), index)) from None
        except TypeError:
            raise TraceError("%s is indexed by a Python int, not %s"
                             % (self._path, type(index).__name__)) from None

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __repr__(self):
        return "EnvoyList(%s, %d)" % (self._path, len(self._items))


def build_tree(model, site_paths):
    """The root's children and accessors from dotted site paths (`model.layers.3.output`)."""
    tree = {}
    for path in site_paths:
        *modules, accessor = path.split(".")
        if not modules:
            continue  # logits, samples, result: not modules
        node = tree
        for name in modules:
            node = node.setdefault(name, {})
        node.setdefault("\0sites", {})[accessor] = path
    return _children(model, "", tree)


def _children(model, prefix, node):
    children = {}
    for name, child in node.items():
        if name == "\0sites":
            continue
        path = prefix + name
        sub = {k for k in child if k != "\0sites"}
        if sub and all(k.isdigit() for k in sub):
            items = [_envoy(model, "%s.%d" % (path, i), child[str(i)])
                     for i in range(len(sub))]
            children[name] = EnvoyList(path, items)
        else:
            children[name] = _envoy(model, path, child)
    return children


def _envoy(model, path, node):
    return Envoy(model, path, _children(model, path + ".", node), node.get("\0sites", {}))

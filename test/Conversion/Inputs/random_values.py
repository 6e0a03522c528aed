"""The vocabulary of the random programs (random_programs.py): the tiny Qwen3's sizes, the
params and sites programs use, and how an expression, a site and a request's state at one step
are represented. Shared by the generator modules and the reference (random_cases.py).
"""
D, K, I, V = 64, 32, 128, 256
PER_FILE = 40
STEPS = 4  # each request runs steps 0..STEPS
PARAMS = [("w", "f32[hidden, hidden]"), ("v", "f32[hidden]"), ("a", "f32"), ("tok", "i64"),
          ("u", "f32[vocab]"), ("m", "f32[intermediate]")]
# (firing rank within a layer, accessor, width); the logits site comes after every layer.
LAYER_SITES = [(0, "input", D), (1, "self_attn.k_proj.output", K), (2, "self_attn.output", D),
               (3, "mlp.act_fn.output", I), (4, "mlp.output", D), (5, "output", D)]
T = "T"


class E:
    """An expression: its nns text, its torch evaluation and its static shape and dtype."""

    def __init__(self, text, fn, shape, dtype="f", fresh=True):
        self.text, self.fn, self.shape, self.dtype, self.fresh = text, fn, shape, dtype, fresh


class Site:
    def __init__(self, layer, accessor, width):
        self.layer, self.width = layer, width
        if layer is None:
            self.text, self.path, self.shape = "logits", "logits", (V,)
        else:
            self.text = f"layers[{layer}].{accessor}"
            self.path = f"model.layers.{layer}.{accessor}"
            self.shape = (T, width)


class State:
    """One request at one step during the torch evaluation."""

    def __init__(self, env, sites, params, step, saves):
        self.env, self.sites, self.params, self.step, self.saves = env, sites, params, step, saves
        # Values written by .skip() as the skipped module's output, by output site path.
        self.skipped = {}
        # stop() / finish() ran at this step.
        self.flags = set()


# Module calls evaluate with the reference model's own modules, by module path
# ("model.layers.3.mlp"); random_cases.py fills this table before evaluating.
MODULES = {}


def suffixes(shape):
    return [shape[i:] for i in range(len(shape) + 1)]


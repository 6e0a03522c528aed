"""Random f32 expressions of a requested static shape, each rendered to nns text together
with its torch evaluation (random_values.E). The statements of random_statements.py build on
these.
"""
import torch

import random_values as rv
from random_values import D, E, I, K, T, V, suffixes


class ExprGen:
    """Random expressions for one program; names it binds are numbered across the program."""

    def __init__(self, rng):
        self.r = rng
        self.names = 0

    def fresh_name(self, prefix):
        self.names += 1
        return f"{prefix}{self.names}"

    def const(self):
        return round(self.r.uniform(-2, 2), 2)

    # Leaves of an exact f32 shape, or None.
    def leaf(self, ctx, shape):
        r, site = self.r, ctx["site"]
        options = []
        if shape == ():
            c = self.const()
            options.append(E(f"({c})" if c < 0 else f"{c}", lambda s, c=c: torch.tensor(c), (),
                             fresh=False))
            options.append(E("a", lambda s: s.params["a"], (), fresh=False))
            if ctx["loop"]:
                options.append(E("step", lambda s: torch.tensor(s.step), (), "i", fresh=False))
        if site.shape == shape:
            options.append(E(site.text, lambda s, p=site.path: s.sites[p].clone(), shape,
                             fresh=False))
        if site.shape[0] == T and shape == site.shape[1:]:
            i = r.choice([0, -1])
            options.append(E(f"{site.text}[{i}]",
                             lambda s, p=site.path, i=i: s.sites[p][i].clone(), shape,
                             fresh=False))
        for name, width in [("v", D), ("u", V), ("m", I)]:
            if shape == (width,):
                options.append(E(name, lambda s, n=name: s.params[n], shape, fresh=False))
        if shape == (K,):
            a, b, c = r.choice([(0, K, 1), (None, None, 2), (-K, None, 1), (16, 48, 1)])
            text = f"v[{'' if a is None else a}:{'' if b is None else b}{'' if c == 1 else ':2'}]"
            options.append(E(text, lambda s, a=a, b=b, c=c: s.params["v"][a:b:c], shape,
                             fresh=False))
        for name, (vshape, _) in ctx["vars"].items():
            if vshape == shape:
                options.append(E(name, lambda s, n=name: s.env[n], shape, fresh=False))
        return r.choice(options) if options else None

    def f32(self, ctx, shape, depth):
        """An f32 expression of exactly `shape`, or None when none can be built here."""
        r = self.r
        if depth <= 0 or r.random() < 0.25:
            e = self.leaf(ctx, shape)
            if e is not None or depth <= -2:
                return e
        makers = [self.binop, self.binop, self.unary, self.where, self.clamp, self.reduce,
                  self.index, self.matmul, self.softmax, self.maximum, self.module_call]
        for _ in range(8):
            e = r.choice(makers)(ctx, shape, depth - 1)
            if e is not None:
                return e
        return self.leaf(ctx, shape)

    def binop(self, ctx, shape, d):
        r = self.r
        a = self.f32(ctx, shape, d)
        if a is None:
            return None
        b = self.f32(ctx, r.choice(suffixes(shape)), d)
        if b is None:
            return None
        if r.random() < 0.3:
            a, b = b, a
        op = r.choice(["+", "-", "*", "/"])
        if op == "/":
            return E(f"({a.text} / (abs({b.text}) + 1))",
                     lambda s: a.fn(s) / (b.fn(s).abs() + 1), shape)
        fns = {"+": torch.add, "-": torch.sub, "*": torch.mul}
        return E(f"({a.text} {op} {b.text})", lambda s: fns[op](a.fn(s), b.fn(s)).float(), shape)

    def unary(self, ctx, shape, d):
        x = self.f32(ctx, shape, d)
        if x is None:
            return None
        name = self.r.choice(["relu", "tanh", "sigmoid", "silu", "gelu", "abs", "neg", "exp",
                              "log", "sqrt"])
        table = {
            "relu": ("relu({})", torch.relu), "tanh": ("tanh({})", torch.tanh),
            "sigmoid": ("sigmoid({})", torch.sigmoid),
            "silu": ("silu({})", torch.nn.functional.silu),
            "gelu": ("gelu({})", torch.nn.functional.gelu), "abs": ("abs({})", torch.abs),
            "neg": ("(-{})", torch.neg),
            "exp": ("exp(clamp({}, -4, 4))", lambda t: torch.exp(t.clamp(-4, 4))),
            "log": ("log(abs({}) + 1)", lambda t: torch.log(t.abs() + 1)),
            "sqrt": ("sqrt(abs({}))", lambda t: torch.sqrt(t.abs())),
        }
        text, fn = table[name]
        return E(text.format(x.text), lambda s: fn(x.fn(s).float()), shape)

    def cmp(self, ctx, shape, d):
        # Against a constant: comparing two expressions of one value (tanh(v) < v) is a tie
        # that rounding decides differently in the kernels and in torch.
        a = self.f32(ctx, shape, d)
        if a is None:
            return None
        c = round(self.r.uniform(-1, 1), 2)
        op = self.r.choice([">", "<"])
        fn = torch.gt if op == ">" else torch.lt
        return E(f"({a.text} {op} {c})", lambda s: fn(a.fn(s), c), shape, "b")

    def where(self, ctx, shape, d):
        c = self.cmp(ctx, shape, d)
        if c is None:
            return None
        a = self.f32(ctx, shape, d)
        if a is None:
            return None
        b = self.f32(ctx, self.r.choice(suffixes(shape)), d)
        if b is None:
            return None
        return E(f"where({c.text}, {a.text}, {b.text})",
                 lambda s: torch.where(c.fn(s), a.fn(s), b.fn(s)).float(), shape)

    def clamp(self, ctx, shape, d):
        x = self.f32(ctx, shape, d)
        if x is None:
            return None
        lo = round(self.r.uniform(-1, 0), 2)
        hi = round(self.r.uniform(0, 1), 2)
        form = self.r.choice(["both", "both", "min", "max"])
        if form == "min":
            return E(f"{x.text}.clamp(min={lo})", lambda s: x.fn(s).float().clamp(min=lo), shape)
        if form == "max":
            return E(f"clamp({x.text}, max={hi})", lambda s: x.fn(s).float().clamp(max=hi), shape)
        if self.r.random() < 0.5:
            text = f"clamp({x.text}, {lo}, {hi})"
        else:
            text = f"{x.text}.clamp(min={lo}, max={hi})"
        return E(text, lambda s: x.fn(s).float().clamp(lo, hi), shape)

    def maximum(self, ctx, shape, d):
        a = self.f32(ctx, shape, d)
        if a is None:
            return None
        b = self.f32(ctx, shape, d)
        if b is None:
            return None
        if b.dtype != "f":
            return None
        name = self.r.choice(["max", "min"])
        fn = torch.maximum if name == "max" else torch.minimum
        return E(f"{name}({a.text}, {b.text})", lambda s: fn(a.fn(s).float(), b.fn(s)), shape)

    def softmax(self, ctx, shape, d):
        if shape == ():
            return None
        x = self.f32(ctx, shape, d)
        if x is None:
            return None
        name = self.r.choice(["softmax", "log_softmax"])
        dim = self.r.choice([-1, 0]) if len(shape) == 2 else -1
        fn = torch.softmax if name == "softmax" else torch.log_softmax
        arg = "" if dim == -1 else "0"
        text = (f"{x.text}.{name}({arg})" if self.r.random() < 0.5
                else f"{name}({x.text}{', dim=0' if dim == 0 else ''})")
        return E(text, lambda s: fn(x.fn(s).float(), dim), shape)

    def reduce(self, ctx, shape, d):
        r = self.r
        name = r.choice(["sum", "mean", "max", "min", "norm"])
        fns = {"sum": lambda t, k: t.sum(k), "mean": lambda t, k: t.mean(k),
               "max": lambda t, k: t.max(k).values, "min": lambda t, k: t.min(k).values,
               "norm": lambda t, k: t.norm(dim=k)}
        if shape == ():
            x = self.f32(ctx, (r.choice([D, K, I, V]),), d)
            if x is None:
                return None
            dim, arg = -1, ""
        elif shape == (T,):
            x = self.f32(ctx, (T, r.choice([D, K, I])), d)
            if x is None:
                return None
            # Not "": without a dim a reduction reduces every dimension (docs/LanguageSpec.md v2).
            dim, arg = -1, r.choice(["dim=-1, keepdim=False", "-1", "dim=-1"])
        elif len(shape) == 1:
            base = self.f32(ctx, (T,) + shape, d)
            if base is None:
                return None
            dim, arg = 0, r.choice(["0", "dim=0"])
            a, b = r.choice([(None, None), (-2, None), (0, 2), (None, 3)])
            if (a, b) != (None, None):
                text = f"{base.text}[{'' if a is None else a}:{'' if b is None else b}]"
                x = E(text, lambda s, a=a, b=b: base.fn(s)[a:b], (T,) + shape, fresh=False)
            else:
                x = base
        else:
            return None
        if name == "norm":
            text = f"{x.text}.norm({'dim=' + str(dim) if arg else ''})"
        elif r.random() < 0.5:
            text = f"{x.text}.{name}({arg})"
        else:
            text = f"{name}({x.text}{', ' + arg if arg else ''})"
        return E(text, lambda s: fns[name](x.fn(s).float(), dim), shape)

    def argmax_operand(self, ctx, shape, d):
        """An expression of `shape` plus a param of its last dimension, or None. Entries a
        program makes (nearly) equal, as in `x - x.log_softmax()`, would make argmax pick
        between near-ties that the kernels and torch round differently; the param keeps one
        clear maximum."""
        tiebreak = {D: ("v", lambda p: p["v"]), K: ("v[0:32]", lambda p: p["v"][0:32]),
                    I: ("m", lambda p: p["m"]), V: ("u", lambda p: p["u"])}
        if not shape or shape[-1] not in tiebreak:
            return None
        x = self.f32(ctx, shape, d)
        if x is None:
            return None
        text, param = tiebreak[shape[-1]]
        # Times 3, a factor the generator's constants (within [-2, 2]) do not reach: the
        # param alone is cancelled by operands like log_softmax(c - v) + v (seed 3, p252).
        return E(f"({x.text} + 3 * {text})", lambda s: x.fn(s).float() + 3 * param(s.params),
                 shape)

    def index(self, ctx, shape, d):
        r = self.r
        if shape == ():
            w = r.choice([D, K, I, V])
            x = self.f32(ctx, (w,), d)
            if x is None:
                return None
            if r.random() < 0.3:
                y = self.argmax_operand(ctx, (w,), d)
                if y is None:
                    return None
                return E(f"{x.text}[{y.text}.argmax()]",
                         lambda s: x.fn(s)[y.fn(s).argmax()].float(), shape)
            i = r.randrange(-w, w)
            return E(f"{x.text}[{i}]", lambda s: x.fn(s)[i].float(), shape, fresh=False)
        if len(shape) == 1 and shape[0] != T:
            x = self.f32(ctx, (T,) + shape, d)
            if x is None:
                return None
            i = r.choice([0, -1])
            return E(f"{x.text}[{i}]", lambda s: x.fn(s)[i].float(), shape, fresh=False)
        if shape == (T, K):
            x = self.f32(ctx, (T, D), d)
            if x is None:
                return None
            a = r.choice([0, 16, 32])
            return E(f"{x.text}[:, {a}:{a + K}]", lambda s: x.fn(s)[:, a:a + K].float(), shape,
                     fresh=False)
        return None

    def matmul(self, ctx, shape, d):
        r = self.r
        if shape in [(T, D), (D,)]:
            x = self.f32(ctx, shape, d)
            if x is None:
                return None
            if shape == (D,) and r.random() < 0.5:
                return E(f"(w @ {x.text})", lambda s: s.params["w"] @ x.fn(s).float(), shape)
            return E(f"({x.text} @ w)", lambda s: x.fn(s).float() @ s.params["w"], shape)
        if shape in [(T,), ()]:
            x = self.f32(ctx, shape + (D,), d)
            if x is None:
                return None
            return E(f"({x.text} @ v)", lambda s: x.fn(s).float() @ s.params["v"], shape)
        return None

    # Module calls: a norm, projection, MLP, activation or lm_head of the model applied to a
    # value (docs/Language.md); the kernels reach the runtime's call_module, the reference
    # uses the transformers model's module (random_values.MODULES).
    def module_call(self, ctx, shape, d):
        r = self.r
        if ctx.get("in_if") or not shape or shape[-1] == T:
            return None
        l = r.randrange(16)
        choices = {
            D: [("norm", "model.norm", D), (f"layers[{l}].mlp", f"model.layers.{l}.mlp", D),
                (f"layers[{l}].input_layernorm", f"model.layers.{l}.input_layernorm", D),
                (f"layers[{l}].self_attn.o_proj", f"model.layers.{l}.self_attn.o_proj", D),
                (f"layers[{l}].mlp.down_proj", f"model.layers.{l}.mlp.down_proj", I)],
            K: [(f"layers[{l}].self_attn.k_proj", f"model.layers.{l}.self_attn.k_proj", D)],
            I: [(f"layers[{l}].mlp.up_proj", f"model.layers.{l}.mlp.up_proj", D),
                (f"layers[{l}].mlp.act_fn", f"model.layers.{l}.mlp.act_fn", I)],
            V: [("lm_head", "lm_head", D)],
        }.get(shape[-1])
        if not choices:
            return None
        text, path, width = r.choice(choices)
        x = self.f32(ctx, shape[:-1] + (width,), d)
        if x is None:
            return None
        def fn(s):
            with torch.no_grad():
                return rv.MODULES[path](x.fn(s).float())
        return E(f"{text}({x.text})", fn, shape)


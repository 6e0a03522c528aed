"""Differential test of compiled bundles on randomly generated trace programs.

`generate DIR SEED N` writes N random valid programs (named traces, many per file)
over the compiled subset of docs/Language.md for the tiny Qwen3 config (hidden 64, k_proj 32,
intermediate 128, vocab 256). `check DIR` rebuilds the same programs from the seed, loads each
file's bundle through the C ABI (bundle_ctypes.BundleRunner) and simulates staggered requests
(prompt of 1-5 tokens, then decode steps of one token, so a kernel call mixes token counts and
steps); every site write and every save is compared with the program evaluated in torch from
the same random structure (never by parsing the text).
"""
import ctypes as C
import json
import os
import random
import sys

import torch

from bundle_ctypes import BundleRunner

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


def suffixes(shape):
    return [shape[i:] for i in range(len(shape) + 1)]


class Gen:
    """Random expressions and statements for one program."""

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
                  self.index, self.matmul, self.softmax, self.maximum]
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
            dim, arg = -1, r.choice(["", "-1", "dim=-1"])
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
        return E(f"({x.text} + {text})", lambda s: x.fn(s).float() + param(s.params), shape)

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

    # Statements: (nns lines, torch action).
    def var_shapes(self, site):
        if site.shape[0] == T:
            w = site.width
            return [(T, w), (w,), (), (T,), (D,), (T, D)]
        return [(V,), (), (D,)]

    def bool_cond(self, ctx, d):
        r = self.r
        x = self.f32(ctx, (), d)
        if x is None:
            return None
        c = round(r.uniform(-1, 1), 2)
        op = r.choice([">", "<"])
        e = E(f"({x.text} {op} {c})",
              lambda s: bool((x.fn(s) > c) if op == ">" else (x.fn(s) < c)), (), "b")
        if ctx["loop"] and r.random() < 0.5:
            k = r.randrange(0, STEPS + 1)
            sop = r.choice([">", "==", "<"])
            sfn = {">": lambda s: s.step > k, "==": lambda s: s.step == k,
                   "<": lambda s: s.step < k}[sop]
            if r.random() < 0.5:
                return E(f"step {sop} {k}", sfn, (), "b")
            return E(f"(step {sop} {k}) and {e.text}", lambda s: sfn(s) and e.fn(s), (), "b")
        if r.random() < 0.2:
            return E(f"not {e.text}", lambda s: not e.fn(s), (), "b")
        return e

    def site_write(self, ctx):
        r, site = self.r, ctx["site"]
        path = site.path
        if site.layer is None:
            kind = r.choice(["ban", "ban", "argmax", "const", "whole", "update"])
            if kind == "ban":
                return [f"logits[tok] = -1e9"], lambda s: s.sites[path].__setitem__(
                    s.params["tok"], -1e9)
            if kind == "argmax":
                x = self.argmax_operand(ctx, (V,), 1)
                if x is None:
                    return None
                return [f"logits[{x.text}.argmax()] = -1e9"], lambda s: s.sites[path].__setitem__(
                    x.fn(s).argmax(), -1e9)
            if kind == "const":
                i = r.randrange(-V, V)
                x = self.f32(ctx, (), 1)
                if x is None:
                    return None
                return [f"logits[{i}] = {x.text}"], lambda s: s.sites[path].__setitem__(
                    i, x.fn(s).float())
        elif site.layer is not None:
            kind = r.choice(["whole", "update", "update", "row", "rowupdate", "cols"])
        if kind == "whole":
            x = self.f32(ctx, r.choice(suffixes(site.shape)), 2)
            if x is None:
                return None
            def act(s):
                s.sites[path][...] = x.fn(s).float()
            return [f"{site.text} = {x.text}"], act
        if kind == "update":
            x = self.f32(ctx, r.choice(suffixes(site.shape)), 2)
            if x is None:
                return None
            op = r.choice(["+", "-", "*"])
            fn = {"+": torch.add, "-": torch.sub, "*": torch.mul}[op]
            def act(s):
                s.sites[path][...] = fn(s.sites[path], x.fn(s).float())
            return [f"{site.text} {op}= {x.text}"], act
        if kind in ["row", "rowupdate"]:
            i = r.choice([0, -1])
            x = self.f32(ctx, r.choice(suffixes(site.shape[1:])), 2)
            if x is None:
                return None
            if kind == "row":
                def act(s):
                    s.sites[path][i] = x.fn(s).float()
                return [f"{site.text}[{i}] = {x.text}"], act
            def act(s):
                s.sites[path][i] += x.fn(s).float()
            return [f"{site.text}[{i}] += {x.text}"], act
        a = r.randrange(0, site.width - 8)
        b = a + r.randrange(1, 8)
        x = self.f32(ctx, (), 1)
        if x is None:
            return None
        def act(s):
            s.sites[path][:, a:b] = x.fn(s).float()
        return [f"{site.text}[:, {a}:{b}] = {x.text}"], act

    def save(self, ctx, shape=None):
        r = self.r
        name = self.fresh_name("s")
        shape = shape or r.choice(self.var_shapes(ctx["site"]))
        if shape != () and shape[-1] != T and r.random() < 0.2:
            x = self.argmax_operand(ctx, shape, 2)
            if x is None:
                return None
            dim = -1
            text = f"{name} = {x.text}.argmax().save()"
            fn = lambda s: x.fn(s).argmax(dim)
        else:
            x = self.f32(ctx, shape, 2)
            if x is None:
                return None
            text = f"{name} = {x.text}.save()"
            fn = lambda s: x.fn(s)
        def act(s):
            s.saves[name] = fn(s)
        return [text], act

    def bind(self, ctx):
        name = self.fresh_name("x")
        shape = self.r.choice(self.var_shapes(ctx["site"]))
        x = self.f32(ctx, shape, 2)
        if x is None:
            return None
        ctx["vars"][name] = (shape, x.fresh)
        ctx["scope"].append(name)
        def act(s):
            s.env[name] = x.fn(s).float()
        return [f"{name} = {x.text}"], act

    def local_update(self, ctx):
        names = [n for n in ctx["scope"] if ctx["vars"][n][1]]
        if not names:
            return None
        name = self.r.choice(names)
        shape = ctx["vars"][name][0]
        if shape != () and self.r.random() < 0.5:
            i = self.r.choice([0, -1])
            x = self.f32(ctx, shape[1:], 1)
            if x is None:
                return None
            def act(s):
                t = s.env[name].clone()
                t[i] = x.fn(s).float()
                s.env[name] = t
            return [f"{name}[{i}] = {x.text}"], act
        x = self.f32(ctx, self.r.choice(suffixes(shape)), 1)
        if x is None:
            return None
        def act(s):
            s.env[name] = s.env[name] + x.fn(s).float()
        return [f"{name} += {x.text}"], act

    def statement(self, ctx, kinds=None):
        kinds = kinds or ["bind", "bind", "write", "write", "save", "if", "local", "cache"]
        while True:
            st = getattr(self, "st_" + self.r.choice(kinds))(ctx)
            if st is not None:
                return st

    def st_bind(self, ctx):
        return self.bind(ctx)

    def st_write(self, ctx):
        return self.site_write(ctx)

    def st_save(self, ctx):
        return self.save(ctx)

    def st_local(self, ctx):
        return self.local_update(ctx)

    def st_cache(self, ctx):
        if ctx["cached"]:
            return None
        ctx["cached"] = True
        site = ctx["site"]
        # The evaluator records cached sites after the whole step (check_program), as a cache
        # records the value the model continues with.
        def act(s):
            s.cache.append(site.path)
        return [f"cache({site.text})"], act

    def st_if(self, ctx):
        r = self.r
        cond = self.bool_cond(ctx, 1)
        if cond is None:
            return None
        # Branches write, save, bind and update their own names; names bound in a branch stay
        # in it (rebinding an outer name makes results, which kernels reject).
        kinds = ["write", "write", "save", "bind", "local"]
        def branch():
            inner = dict(ctx, vars=dict(ctx["vars"]), scope=[], in_if=True)
            return [self.statement(inner, kinds) for _ in range(r.randint(1, 2))]
        then = branch()
        other = branch() if r.random() < 0.5 else []
        lines = [f"if {cond.text} {{"] + ["    " + l for st in then for l in st[0]]
        lines += (["} else {"] + ["    " + l for st in other for l in st[0]] + ["}"]
                  if other else ["}"])
        def act(s):
            for st in (then if cond.fn(s) else other):
                st[1](s)
        return lines, act


class Program:
    """A random trace: segments of statements, each top-level (step 0) or a steps loop."""

    def __init__(self, rng, index):
        self.name = f"p{index}"
        g = Gen(rng)
        layers = sorted(rng.sample(range(16), rng.randint(1, 3)))
        sites = [Site(l, acc, w) for l in layers
                 for _, acc, w in sorted(rng.sample(LAYER_SITES, rng.randint(1, 2)))]
        if rng.random() < 0.4:
            sites.append(Site(None, None, V))
        self.segments, self.sites = [], sites
        top_vars, i = {}, 0
        while i < len(sites):
            n = rng.randint(1, 2)
            chunk, i = sites[i:i + n], i + n
            loop = None
            if rng.random() < 0.5:
                a = rng.randrange(0, 3)
                b = rng.choice([None, a + rng.randint(1, 3)])
                c = rng.choice([1, 1, 2])
                loop = (a, b, c)
            # A loop sees the names bound before it (their step-0 values, carried across
            # steps in the frame) but does not rebind them. Those with the token dimension keep
            # the prompt's T, which the kernels do not broadcast against a later step's T=1
            # (a run-time shape error where torch would broadcast): not used in loops.
            vars_ = dict(top_vars) if loop is None else {
                k: v for k, v in top_vars.items() if T not in v[0]}
            stmts = []
            for site in chunk:
                ctx = dict(site=site, vars=vars_, loop=loop is not None, scope=[],
                           cached=False)
                for _ in range(rng.randint(1, 3)):
                    if ctx.get("closed"):
                        break
                    stmts.append(g.statement(ctx))
            # Names bound in a loop are per step and not visible after it.
            if loop is None:
                top_vars = vars_
            self.segments.append((loop, stmts))

    def text(self):
        lines = [f"trace {self.name} {{"]
        for loop, stmts in self.segments:
            if loop is None:
                lines += ["    " + l for st in stmts for l in st[0]]
            else:
                a, b, c = loop
                rng_text = f"steps[{a}:{'' if b is None else b}{'' if c == 1 else ':' + str(c)}]"
                lines.append(f"    for step in {rng_text} {{")
                lines += ["        " + l for st in stmts for l in st[0]]
                lines.append("    }")
        return "\n".join(lines + ["}"])

    def run_step(self, env, sites, params, step):
        """Evaluates the statements that run at `step`; returns saves and cached paths."""
        s = State(env, sites, params, step, {})
        s.cache = []
        for loop, stmts in self.segments:
            if loop is None:
                active = step == 0
            else:
                a, b, c = loop
                active = step >= a and (b is None or step < b) and (step - a) % c == 0
            if not active:
                continue
            local = State(dict(env) if loop else env, sites, params, step, s.saves)
            local.cache = s.cache
            for _, act in stmts:
                act(local)
        return s.saves, s.cache


def programs(seed, count):
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        p = Program(rng, len(out))
        # A trace that touches no site is rejected by design ('needs at least one site').
        if any(site.text in p.text() for site in p.sites):
            out.append(p)
    return out


def generate(out, seed, count):
    progs = programs(seed, count)
    header = "\n".join(f"param {n}: {t}" for n, t in PARAMS)
    for f in range(0, count, PER_FILE):
        with open(os.path.join(out, f"random-{f // PER_FILE:03d}.nns"), "w") as fh:
            fh.write(f"# Random programs, seed {seed}: regenerate with random_programs.py\n")
            fh.write(header + "\n")
            for p in progs[f:f + PER_FILE]:
                fh.write(p.text() + "\n")
    with open(os.path.join(out, "random.json"), "w") as fh:
        json.dump(dict(seed=seed, count=count), fh)


def close(got, want):
    if got.shape != want.shape:
        return False
    if want.dtype in (torch.int64, torch.bool):
        return torch.equal(got.to(want.dtype), want)
    return torch.allclose(got.float(), want.float(), atol=1e-3, rtol=1e-3, equal_nan=True)


def check_program(runner, trace_index, prog, rng):
    """Runs staggered requests through every site kernel; returns a list of mismatches."""
    trace = runner.trace(trace_index)
    entries = [trace.sites[i] for i in range(trace.num_sites)]
    save_names = [trace.saves[i].name.decode() for i in range(trace.num_saves)]
    frame_bytes = max(trace.frame_bytes, 8)
    by_path = {s.path: s for s in prog.sites}
    requests = []
    for r in range(4):
        params = dict(w=torch.randn(D, D) / 8, v=torch.randn(D), a=torch.randn(()),
                      tok=torch.tensor(rng.randrange(-V, V)), u=torch.randn(V),
                      m=torch.randn(I))
        requests.append(dict(id=r + 1, start=rng.randrange(0, 3), prompt=rng.randint(1, 5),
                             params=params, env={}, frame=C.create_string_buffer(frame_bytes)))
    problems = []
    runner.saves.clear()
    runner.errors.clear()
    for tick in range(max(q["start"] for q in requests) + STEPS + 1):
        active = [q for q in requests if 0 <= tick - q["start"] <= STEPS]
        want_saves = {}
        inputs, finals = {}, {}
        for q in active:
            step = tick - q["start"]
            tokens = q["prompt"] if step == 0 else 1
            sites = {p: torch.randn(V) if s.layer is None else torch.randn(tokens, s.width)
                     for p, s in by_path.items()}
            inputs[q["id"]] = {p: t.clone() for p, t in sites.items()}
            saves, cache = prog.run_step(q["env"], sites, q["params"], step)
            for p in cache:
                saves[p] = sites[p].clone()
            finals[q["id"]] = sites
            for name, value in saves.items():
                want_saves[(q["id"], name, step)] = value
        if not active:
            continue
        got_saves = {}
        for entry in entries:
            path = entry.site_path.decode()
            site = by_path[path]
            row, groups, chunks = 1, [], []
            for q in active:
                t = inputs[q["id"]][path]
                t = t.unsqueeze(0) if site.layer is None else t
                groups.append(dict(row=row, rows=t.shape[0], step=tick - q["start"],
                                   params=[q["params"][n] for n, _ in PARAMS],
                                   frame=q["frame"], request=q["id"]))
                chunks.append(t)
                row += t.shape[0]
            width = chunks[0].shape[1]
            flat = torch.cat([torch.randn(1, width)] + chunks + [torch.randn(1, width)])
            pad = (flat[0].clone(), flat[-1].clone())
            runner.saves.clear()
            runner.run_site(trace, entries.index(entry), flat, groups)
            for request, index, step, value in runner.saves:
                got_saves[(request, save_names[index], step)] = value
            for g, q in zip(groups, active):
                want = finals[q["id"]][path]
                got = flat[g["row"]:g["row"] + g["rows"]]
                got = got[0] if site.layer is None else got
                if not close(got, want):
                    problems.append(f"{path} step {g['step']} request {q['id']}: got "
                                    f"{got.flatten()[:3].tolist()} want {want.flatten()[:3].tolist()}")
            if not (torch.equal(flat[0], pad[0]) and torch.equal(flat[-1], pad[-1])):
                problems.append(f"{path}: padding rows written")
        for key in set(want_saves) | set(got_saves):
            if key not in got_saves or key not in want_saves:
                problems.append(f"save {key}: {'missing' if key not in got_saves else 'extra'}")
            elif not close(got_saves[key], want_saves[key]):
                problems.append(f"save {key}: got {got_saves[key].flatten()[:3].tolist()} "
                                f"want {want_saves[key].flatten()[:3].tolist()}")
    for request, message in runner.errors:
        problems.append(f"request {request}: error {message}")
    return problems


def check(out):
    cfg = json.load(open(os.path.join(out, "random.json")))
    progs = programs(cfg["seed"], cfg["count"])
    torch.manual_seed(cfg["seed"])
    rng = random.Random(cfg["seed"])
    failed = 0
    for f in range(0, len(progs), PER_FILE):
        runner = BundleRunner(os.path.join(out, f"random-{f // PER_FILE:03d}.nnsb"))
        for i, prog in enumerate(progs[f:f + PER_FILE]):
            try:
                problems = check_program(runner, i, prog, rng)
            except Exception as e:  # a crash is reported with the program, not the whole run
                problems = [f"{type(e).__name__}: {e}"]
            if problems:
                failed += 1
                print(f"FAIL {prog.name}: {problems[0]} ({len(problems)} mismatches)")
                print(prog.text())
    print(f"{len(progs) - failed} of {len(progs)} random programs agree")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(check(sys.argv[2]))

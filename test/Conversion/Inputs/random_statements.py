"""Random statements (binds, site writes and updates, saves, local updates, cache(), run-time
`if`) over the expressions of random_exprs.py, each as (nns lines, torch action on a State).
"""
import torch

from random_exprs import ExprGen
from random_values import D, E, STEPS, T, V, suffixes


class Gen(ExprGen):
    """Random expressions and statements for one program."""

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
            # The last dimension: without a dim, argmax is over every dimension (docs/LanguageSpec.md v2).
            dim = -1
            text = f"{name} = {x.text}.argmax(-1).save()"
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
        # random_cases.write_program records cached sites after the whole step, as a cache
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


"""Random valid trace programs, each a structure that renders to nns text and evaluates itself
in torch (never by parsing the text).

`random_programs.py DIR SEED N` writes N programs (named traces, 40 per file) over the compiled
subset of docs/Language.md for the tiny Qwen3 config (hidden 64, k_proj 32, intermediate 128,
vocab 256). random_cases.py turns the same programs into reference cases that
NNSCDifferentialTests replays against the compiled bundles (docs/Testing.md, "Differential
testing of bundles"). The pieces: random_values (sizes, sites, representation),
random_exprs (expressions), random_statements (statements), random_endings (.skip(), stop(),
finish()); this module assembles whole traces.
"""
import os
import random
import sys

from random_endings import add_ending, plan_skip, site_key, skip_statement
from random_statements import Gen
from random_values import LAYER_SITES, PARAMS, PER_FILE, T, V, Site, State


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
        sites, self.skip = plan_skip(rng, sites)
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
                if self.skip and site is self.skip[0] and not ctx.get("closed"):
                    stmts.append(skip_statement(g, ctx, self.skip))
            # Names bound in a loop are per step and not visible after it.
            if loop is None:
                top_vars = vars_
            self.segments.append((loop, stmts))
        add_ending(rng, self.segments)

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

    invokes = 1

    def sites_of(self, invoke):
        return self.sites

    def run_step(self, env, sites, params, step):
        """Evaluates the statements that run at `step` on `sites` (one dict of site values
        per invoke); returns the State: saves by result name (".<step>" for those in loops),
        cache as (path, result name), skipped outputs, stop/finish flags."""
        s = State(env, sites[0], params, step, {})
        s.cache = []
        for loop, stmts in self.segments:
            if loop is None:
                active = step == 0
            else:
                a, b, c = loop
                active = step >= a and (b is None or step < b) and (step - a) % c == 0
            if not active:
                continue
            local = State(dict(env) if loop else env, sites[0], params, step, {})
            local.cache, local.skipped, local.flags = [], s.skipped, s.flags
            for _, act in stmts:
                act(local)
            suffix = f".{step}" if loop else ""
            s.saves.update({name + suffix: v for name, v in local.saves.items()})
            s.cache += [(path, path + suffix) for path in local.cache]
        return s


class InvokeProgram:
    """A trace of 2-3 invokes, one prompt each, run in the same forward passes (step 0 only).
    A later invoke may use a name of an earlier one at a site at or after the one where it
    was bound; values with a token dimension stay in their invoke (each prompt has its T)."""

    def __init__(self, rng, index):
        self.name = f"p{index}"
        g = Gen(rng)
        self.invoke_sites, self.bodies, shared = [], [], {}
        for _ in range(rng.randint(2, 3)):
            layers = sorted(rng.sample(range(16), rng.randint(1, 2)))
            sites = [Site(l, acc, w) for l in layers
                     for _, acc, w in sorted(rng.sample(LAYER_SITES, rng.randint(1, 2)))]
            if rng.random() < 0.3:
                sites.append(Site(None, None, V))
            own, stmts = {}, []
            for site in sites:
                visible = {n: v[:2] for n, v in shared.items()
                           if v[2] <= site_key(site) and T not in v[0]}
                visible.update(own)
                # No cache(): its saves are named after the site path, one per trace.
                ctx = dict(site=site, vars=visible, loop=False, scope=[], cached=True,
                           last=False)
                for _ in range(rng.randint(1, 3)):
                    if ctx.get("closed"):
                        break
                    stmts.append(g.statement(ctx))
                own.update({n: visible[n] for n in ctx["scope"]})
                shared.update({n: visible[n] + (site_key(site),) for n in ctx["scope"]})
            self.invoke_sites.append(sites)
            self.bodies.append(stmts)
        self.sites = [s for sites in self.invoke_sites for s in sites]
        self.invokes = len(self.bodies)

    def sites_of(self, invoke):
        return self.invoke_sites[invoke]

    def text(self):
        lines = [f"trace {self.name} {{"]
        for k, stmts in enumerate(self.bodies):
            lines.append(f"    invoke i{k} {{")
            lines += ["        " + l for st in stmts for l in st[0]]
            lines.append("    }")
        return "\n".join(lines + ["}"])

    def run_step(self, env, sites, params, step):
        """As Program.run_step; the invokes run in order, each on its prompt's sites."""
        s = State(env, sites[0], params, step, {})
        s.cache = []
        if step != 0:
            return s
        for k, stmts in enumerate(self.bodies):
            local = State(env, sites[k], params, step, s.saves)
            local.cache, local.skipped, local.flags = s.cache, s.skipped, s.flags
            for _, act in stmts:
                act(local)
        return s


def programs(seed, count):
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        if rng.random() < 0.15:
            p = InvokeProgram(rng, len(out))
        else:
            p = Program(rng, len(out))
        # A trace that touches no site is rejected by design ('needs at least one site').
        if all(any(site.text in p.text() for site in p.sites_of(k)) for k in range(p.invokes)):
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
    return progs


if __name__ == "__main__":
    generate(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))

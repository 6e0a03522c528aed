""".skip(), stop() and finish() for the random programs: placed by random_programs.Program
around the statements random_statements.Gen makes.
"""
import torch

from random_values import D, LAYER_SITES, T, Site


def plan_skip(rng, sites):
    """Maybe skips a decoder layer or its MLP: adds the module's input site, drops the sites
    inside it (they never fire). Returns the sites and (input site, module text, output
    path) or None."""
    layers = sorted({s.layer for s in sites if s.layer is not None})
    if not layers or rng.random() > 0.15:
        return sites, None
    l = rng.choice(layers)
    if rng.random() < 0.5:
        module, inner = f"layers[{l}]", [acc for _, acc, _ in LAYER_SITES if acc != "output"]
        entry, out = Site(l, "input", D), f"model.layers.{l}.output"
    else:
        module, inner = f"layers[{l}].mlp", ["mlp.act_fn.output"]
        entry, out = Site(l, "mlp.input", D), f"model.layers.{l}.mlp.output"
    kept = [s for s in sites if not (s.layer == l and s.path.split(f"layers.{l}.")[1] in inner)]
    return sorted(kept + [entry], key=site_key), (entry, module, out)


def site_key(site):
    """Firing order of the generator's sites (the MLP's input fires after self_attn.output)."""
    if site.layer is None:
        return (16, 0)
    accessor = site.path.split(f"layers.{site.layer}.")[1]
    ranks = {acc: rank for rank, acc, _ in LAYER_SITES}
    return (site.layer, ranks.get(accessor, 2.5))


def skip_statement(g, ctx, skip):
    """`MODULE.skip(EXPR)` at the module's input site: the kernel writes EXPR (broadcast to
    [T, hidden]) there, and the runtime fires the output site with it."""
    entry, module, out = skip
    shape = g.r.choice([(T, D), (D,), ()])
    x = g.f32(ctx, shape, 2)
    while x is None:
        x = g.f32(ctx, (), 2)
    def act(s):
        value = torch.broadcast_to(x.fn(s).float(), s.sites[entry.path].shape).clone()
        s.sites[entry.path][...] = value
        s.skipped[out] = value.clone()
        if out in s.sites:
            s.sites[out][...] = value
    ctx["closed"] = True
    return [f"{module}.skip({x.text})"], act


def add_ending(rng, segments):
    """Maybe ends the request: finish() at the end of a random segment (after this step), or
    stop() as the trace's last statement (no site after it in this forward pass)."""
    def flag(name):
        def act(s):
            s.flags.add(name)
        return [f"{name}()"], act
    # Not after a run-time `if`, which the generator may keep last in a trace.
    plain = [seg for seg in segments if not seg[1] or not seg[1][-1][0][0].startswith("if ")]
    if plain and rng.random() < 0.15:
        rng.choice(plain)[1].append(flag("finish"))
    if segments[-1] in plain and rng.random() < 0.1:
        segments[-1][1].append(flag("stop"))


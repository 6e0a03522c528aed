"""Reference cases for the value tests that reduce failures of the random programs
(test/Conversion/random-*.nns run through NNSCDifferentialTests).

`random_repros.py CONFIG_DIR OUT_DIR NAME` writes a random tiny model of CONFIG_DIR's config to
OUT_DIR/tiny-qwen3 and OUT_DIR/NAME.json: the repro NAME's requests on random site tensors, with
what the program leaves in the sites and saves, evaluated here in torch. The bundle, compiled by
the lit test from the .nns file, is OUT_DIR/NAME.nnsb.
"""
import os
import sys

import torch

from diff_case import CaseFile, layout, tiny_model

D = 64


def groups(spans, requests, steps, invokes):
    return [dict(request=r, row=row, rows=n, step=s, invoke=i)
            for (row, n), r, s, i in zip(spans, requests, steps, invokes)]


def step0_loop_save(p):
    """`for step in steps[0:1] { s = layers[1].output[-1].save() }`: saved as `s.0` at the
    prompt pass only."""
    for r in (1, 2):
        p.request(r, {})
    x, spans = layout([torch.randn(3, D), torch.randn(2, D)])
    p.tick()
    p.call("model.layers.1.output", x, x, groups(spans, [1, 2], [0, 0], [0, 0]))
    for (row, n), r in zip(spans, [1, 2]):
        p.save(r, "s.0", x[row + n - 1])
    x, spans = layout([torch.randn(1, D), torch.randn(1, D)])
    p.tick()
    p.call("model.layers.1.output", x, x, groups(spans, [1, 2], [1, 1], [0, 0]))


def invoke_value_at_site(p):
    """A value of invoke 'clean' used by invoke 'corrupt' at a site after the one where it
    is computed but before clean's last site; plus a site-free value of clean."""
    v = torch.randn(D)
    for r in (1, 2):
        p.request(r, dict(v=v))
    counts = [3, 2, 1, 4]  # request 1 clean, corrupt; request 2 clean, corrupt
    reqs, invokes = [1, 1, 2, 2], [0, 1, 0, 1]
    p.tick()
    mlp5, spans = layout([torch.randn(n, D) for n in counts])
    p.call("model.layers.5.mlp.output", mlp5, mlp5,
           groups(spans, reqs, [0] * 4, invokes))
    xs = {r: mlp5[row] * 2 for (row, _), r, k in zip(spans, reqs, invokes) if k == 0}
    inp8, spans = layout([torch.randn(n, D) for n in counts])
    want = inp8.clone()
    for (row, _), r, k in zip(spans, reqs, invokes):
        if k == 1:
            want[row] = xs[r] + v * 2
    p.call("model.layers.8.input", inp8, want, groups(spans, reqs, [0] * 4, invokes))
    mlp13, spans = layout([torch.randn(n, D) for n in counts])
    p.call("model.layers.13.mlp.output", mlp13, mlp13,
           groups(spans, reqs, [0] * 4, invokes))
    for (row, n), r, k in zip(spans, reqs, invokes):
        if k == 0:
            p.save(r, "y", mlp13[row + n - 1])


REPROS = {"random-step0-loop-save": step0_loop_save,
          "random-invoke-value-at-site": invoke_value_at_site}


def main():
    config_dir, out, name = sys.argv[1], sys.argv[2], sys.argv[3]
    if name not in REPROS:
        sys.exit(f"random_repros.py: unknown repro '{name}' (known: {', '.join(REPROS)})")
    tiny_model(config_dir, os.path.join(out, "tiny-qwen3"))
    torch.manual_seed(0)
    case = CaseFile("tiny-qwen3")
    REPROS[name](case.program(name, name + ".nnsb"))
    case.write(os.path.join(out, name + ".json"))


if __name__ == "__main__":
    main()

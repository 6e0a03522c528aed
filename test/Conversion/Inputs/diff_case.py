"""Writes the case files the C++ differential harness replays (NNSCDifferentialTests).

A case file is JSON (model, programs: requests, ticks of site kernel calls, expected saves,
errors, stop() and finish()) plus a safetensors file with the same stem holding every tensor
the JSON names. The reference side builds the expected tensors with torch; the harness runs the
compiled bundle on the same inputs and compares (test/Unit/Differential/DifferentialCase.h).
"""
import json
import os

import torch
from safetensors.torch import save_file


class ProgramCase:
    """One program of a case file; tensors are registered with the owning CaseFile."""

    def __init__(self, case, name, bundle, trace):
        self.case = case
        self.json = dict(name=name, bundle=bundle, trace=trace, requests=[], ticks=[],
                         saves=[], errors=[], stops=[], finishes=[])

    def request(self, rid, params):
        """Request `rid` with `params` (name -> tensor); absent params take their defaults."""
        self.json["requests"].append(
            dict(id=rid, params={n: self.case.tensor(t) for n, t in params.items()}))

    def tick(self):
        """Starts the next forward pass."""
        self.json["ticks"].append([])

    def call(self, site, value, want, groups):
        """A kernel call at `site` on flat `value`; the reference leaves `want`. `groups` are
        dicts with request, row, rows, step and optionally invoke and position."""
        self.json["ticks"][-1].append(dict(site=site, value=self.case.tensor(value),
                                           want=self.case.tensor(want), groups=groups))

    def save(self, rid, name, value):
        self.json["saves"].append(dict(request=rid, name=name, want=self.case.tensor(value)))

    def error(self, rid, contains):
        self.json["errors"].append(dict(request=rid, contains=contains))

    def stop(self, rid, step):
        self.json["stops"].append([rid, step])

    def finish(self, rid, step):
        self.json["finishes"].append([rid, step])


class CaseFile:
    def __init__(self, model):
        self.model = model
        self.tensors = {}
        self.programs = []

    def tensor(self, t):
        key = f"t{len(self.tensors)}"
        t = torch.as_tensor(t)
        self.tensors[key] = (t.float() if t.is_floating_point() else t).detach().contiguous().clone()
        return key

    def program(self, name, bundle, trace=""):
        p = ProgramCase(self, name, bundle, trace)
        self.programs.append(p)
        return p

    def write(self, path):
        """Writes PATH (.json) and its tensors next to it (.safetensors)."""
        save_file(self.tensors, os.path.splitext(path)[0] + ".safetensors")
        with open(path, "w") as f:
            json.dump(dict(model=self.model, programs=[p.json for p in self.programs]), f)


def layout(tensors, pad=1):
    """Stacks per-sequence site tensors into one flat batch with `pad` random rows before and
    after (which no kernel may touch); returns (flat, [(row, rows)])."""
    width = tensors[0].shape[1:]
    rows, spans, parts = pad, [], [torch.randn(pad, *width)]
    for t in tensors:
        spans.append((rows, t.shape[0]))
        parts.append(t)
        rows += t.shape[0]
    parts.append(torch.randn(pad, *width))
    return torch.cat(parts), spans


def tiny_model(config_dir, out, seed=0):
    """A random Hugging Face model of `config_dir`'s config written to `out`; returns it. Norm
    weights and projections are drawn wide (not the initializer's 1 and 0.02) so a module call
    that used the wrong weights would show."""
    import transformers
    config = transformers.AutoConfig.from_pretrained(config_dir)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
    model.save_pretrained(out)
    return model

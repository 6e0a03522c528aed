"""Value checks of shape operations and torch's reductions in kernels (shape-ops.nns,
join-ops.nns): the program written out in torch, run through repro_programs.py's harness
(staggered requests over several steps through the C ABI).
Usage: shape_programs.py BUNDLE NAME
"""
import random
import sys

import torch

from bundle_ctypes import BundleRunner
from repro_programs import D, Repro, check

HEADS, HEAD_DIM = 4, 16  # the tiny Qwen3 config
L2, L3, L5, L6 = (f"model.layers.{i}.output" for i in (2, 3, 5, 6))
O4 = "model.layers.4.self_attn.o_proj.input"


def shape_ops(env, sites, p, step, saves, cache):
    h = sites[L2]
    d = p["v"] / p["v"].norm()
    h[:] = h - (h @ d).unsqueeze(-1) * d
    x = sites[L3]
    x[:] = x - x.mean(-1, keepdim=True) + (x @ p["v"])[:, None] * 0.5
    heads = sites[O4].view(-1, HEADS, HEAD_DIM)
    heads[:, 1] = 0
    heads[:, 2] *= p["a"]
    y = sites[L5]
    saves["s"] = y.sum()
    saves["k"] = y.amax(dim=(0, 1), keepdim=True)
    saves["am"] = y.argmax()
    saves["t"] = y.T
    saves["o"] = torch.outer(p["v"][0:4], y[-1])
    saves["e"] = y[-1].unsqueeze(0).expand(3, -1)
    saves["r"] = y.reshape(-1)
    saves["tr"] = y.view(-1, 4, 16).transpose(0, 1).sum(-1)
    saves["n"] = y[None, -1, None].norm(dim=-1, keepdim=True)
    sites[L6].T[0] = sites[L6][:, 1].clone()


def join_ops(env, sites, p, step, saves, cache):
    h = sites[L2]
    saves["c"] = torch.cat([h, h * p["a"]], dim=-1)
    saves["c2"] = torch.cat((h[:, 0:3], h[:, 10:12], h[:, 1:2]), 1)
    saves["c3"] = torch.cat([h[-1, 0:2], p["tok"][None], p["v"][5:7]])
    saves["s"] = torch.stack([h[-1], p["v"]])
    saves["s2"] = torch.stack([h, h + 1.0], dim=1)
    saves["s3"] = torch.stack((h[-1].sum(), h[0].max(), p["a"]), -1)
    saves["s4"] = torch.stack([h[0], h[-1]], dim=-1)
    saves["b"] = h[-1, 0:4].broadcast_to((3, 4))
    saves["b2"] = torch.broadcast_to(h[:, 0:1], [-1, D])
    x = sites[L3]
    x[:] = torch.cat([x[:, 32:], x[:, :32]], dim=1)


PROGRAMS = {
    "shape-ops": Repro({L2: D, L3: D, O4: HEADS * HEAD_DIM, L5: D, L6: D}, shape_ops),
    "join-ops": Repro({L2: D, L3: D}, join_ops),
}

if __name__ == "__main__":
    torch.manual_seed(0)
    name = sys.argv[2]
    problems = check(BundleRunner(sys.argv[1]), PROGRAMS[name], random.Random(0))
    for p in problems:
        print("FAIL", p)
    print(f"{name}: {'agrees with torch' if not problems else 'differs from torch'}")

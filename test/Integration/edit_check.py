"""Persistent edits (nns-run --edit): an edit plus a request's own capture equals the two
written as one program (saves and tokens), for a bundled request and a plain one; without the
edit the capture sees other values, so the edit is seen to act.

Usage: edit_check.py NNS_RUN MODEL INPUTS WORKDIR
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

PROMPTS = [[504, 3575, 282, 4649, 314], [7356, 3514, 288, 260, 2342]]


def run(nns_run, model, work, name, args, bundled=(True, True)):
    out = os.path.join(work, name)
    prompts = os.path.join(work, name + ".jsonl")
    with open(prompts, "w") as f:
        for ids, b in zip(PROMPTS, bundled):
            f.write(json.dumps({"ids": ids, "bundle": b}) + "\n")
    cmd = [nns_run, "--model", model, "--prompts", prompts, "--max-tokens", "4",
           "--temperature", "0", "--quiet", "--save-dir", out] + args
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {name}: {proc.stderr[-1500:]}")
    results = []
    for i in range(len(PROMPTS)):
        with open(os.path.join(out, f"{i}.json")) as f:
            ids = json.load(f)["ids"]
        results.append((ids, load_file(os.path.join(out, f"{i}.safetensors"))))
    return results


def main():
    nns_run, model, inputs, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    d = torch.randn(576, generator=torch.Generator().manual_seed(0))
    save_file({"d": d / d.norm() * 4}, os.path.join(work, "d.safetensors"))
    param = f"d=@{os.path.join(work, 'd.safetensors')}"
    nns = lambda name: os.path.join(inputs, name)  # noqa: E731
    edited = run(nns_run, model, work, "edited",
                 ["--edit", nns("edit-steer.nns"), "--edit-param", param,
                  "--trace", nns("edit-capture.nns")])
    combined = run(nns_run, model, work, "combined",
                   ["--trace", nns("edit-combined.nns"), "--param", param])
    alone = run(nns_run, model, work, "alone", ["--trace", nns("edit-capture.nns")])
    for i, ((ids_e, s_e), (ids_c, s_c), (_, s_a)) in enumerate(zip(edited, combined, alone)):
        if ids_e != ids_c:
            sys.exit(f"FAIL: request {i}: tokens {ids_e} with the edit, {ids_c} as one program")
        if sorted(s_e) != sorted(s_c) or not all(torch.equal(s_e[k], s_c[k]) for k in s_e):
            sys.exit(f"FAIL: request {i}: saves differ between the edit and one program")
        if torch.allclose(s_e["h"], s_a["h"]):
            sys.exit(f"FAIL: request {i}: the edit did not change what the capture sees")
    print("edit + capture: saves and tokens equal the two written as one program (2 requests); "
          "without the edit the capture differs")
    # A plain request ("bundle": false) gets the edit too: its tokens are the combined program's.
    plain = run(nns_run, model, work, "plain-edited",
                ["--edit", nns("edit-steer.nns"), "--edit-param", param,
                 "--trace", nns("edit-capture.nns")], bundled=(True, False))
    if plain[1][0] != combined[1][0] or plain[1][1]:
        sys.exit(f"FAIL: a plain request with the edit: tokens {plain[1][0]} vs {combined[1][0]}, "
                 f"saves {sorted(plain[1][1])}")
    print("edit on a plain request: its tokens are the edited ones, and it returns no saves")


if __name__ == "__main__":
    main()

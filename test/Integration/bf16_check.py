"""Bundles on a bf16 model: site values are converted to fp32 at the hook boundary and
written back rounded to bf16.

Usage: bf16_check.py NNS_RUN MODEL_DIR STEER.nnsb READ.nnsb WORKDIR

STEER adds v (default 0.5) to layer 1's output and saves layer 3's last row; READ only saves
layer 3's last row. Both run with --dtype fp32 and --dtype bf16 on the same prompts.
- bf16 saves equal the fp32 saves within a bf16 tolerance (relative L2 error <= 3e-2);
- the steering shows in bf16: bf16 STEER differs from bf16 READ by more than 10x that error.
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file

NNS_RUN, MODEL, STEER, READ, WORK = sys.argv[1:6]
PROMPTS = [[1, 5, 9, 14, 20], [3, 7, 11, 19, 23, 29, 31]]


def run(bundle, dtype, name):
    path = os.path.join(WORK, "prompts.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(json.dumps({"ids": ids}) for ids in PROMPTS) + "\n")
    out = os.path.join(WORK, name)
    subprocess.run([NNS_RUN, "--model", MODEL, "--prompts", path, "--bundle", bundle,
                    "--dtype", dtype, "--max-tokens", "2", "--ignore-eos", "--save-dir", out,
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    return [load_file(os.path.join(out, f"{i}.safetensors"))["h"] for i in range(len(PROMPTS))]


def rel(a, b):
    return float((a - b).norm() / b.norm())


def main():
    steer32, steer16 = run(STEER, "fp32", "steer32"), run(STEER, "bf16", "steer16")
    read16 = run(READ, "bf16", "read16")
    worst, effect = 0.0, float("inf")
    for i in range(len(PROMPTS)):
        assert steer16[i].dtype == torch.float32, steer16[i].dtype
        worst = max(worst, rel(steer16[i], steer32[i]))
        effect = min(effect, rel(steer16[i], read16[i]))
    assert worst <= 3e-2, worst
    assert effect > 10 * worst, (effect, worst)
    print(f"bf16: steered saves equal fp32's within relative error {worst:.1e} (<= 3e-2); "
          f"the steering changes them by {effect:.1e}")


if __name__ == "__main__":
    main()

"""Compares two nns-run --save-dir directories: the same files, the same tokens in each
request's JSON, and every saved tensor equal within an absolute tolerance.

usage: compare_saves.py DIR_A DIR_B [--atol X]
"""
import argparse
import json
import os
import sys

from safetensors.torch import load_file


def compare_dirs(dir_a, dir_b, atol):
    """(None, worst difference) when equal, else (what differs, None)."""
    names = sorted(os.listdir(dir_a))
    if names != sorted(os.listdir(dir_b)):
        return f"different files: {names} vs {sorted(os.listdir(dir_b))}", None
    worst = 0.0
    for name in names:
        a, b = os.path.join(dir_a, name), os.path.join(dir_b, name)
        if name.endswith(".json"):
            ja, jb = json.load(open(a)), json.load(open(b))
            if ja.get("ids") != jb.get("ids"):
                return f"{name}: tokens differ: {ja.get('ids')} vs {jb.get('ids')}", None
        elif name.endswith(".safetensors"):
            ta, tb = load_file(a), load_file(b)
            if sorted(ta) != sorted(tb):
                return f"{name}: different saves {sorted(ta)} vs {sorted(tb)}", None
            for key in ta:
                if ta[key].shape != tb[key].shape:
                    return f"{name}/{key}: shape {list(ta[key].shape)} vs {list(tb[key].shape)}", None
                if ta[key].numel() == 0:
                    continue
                diff = (ta[key].double() - tb[key].double()).abs().max().item()
                worst = max(worst, diff)
                if diff > atol:
                    return f"{name}/{key}: max abs difference {diff} > {atol}", None
    return None, worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--atol", type=float, default=1e-3)
    args = parser.parse_args()
    error, worst = compare_dirs(args.a, args.b, args.atol)
    if error:
        sys.exit(error)
    print(f"saves equal: {len(os.listdir(args.a))} files, max abs difference {worst:.2e}")


if __name__ == "__main__":
    main()

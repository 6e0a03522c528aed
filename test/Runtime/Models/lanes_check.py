"""Compares the logits two nns-run runs dumped (--dump-logits): every tensor bit for bit, or
within an absolute tolerance with the same greedy token at every step.

usage: lanes_check.py A.safetensors B.safetensors [--atol X]

Prints "N logits tensors (S steps) bitwise equal" (or "... within X, same greedy tokens") or
the first difference, and exits 1 on a difference.
"""

import sys

import torch
from safetensors.torch import load_file


def main():
    a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
    atol = float(sys.argv[4]) if len(sys.argv) == 5 and sys.argv[3] == "--atol" else None
    if a.keys() != b.keys():
        sys.exit("different tensors: %s vs %s" % (sorted(a), sorted(b)))
    steps = 0
    for key in sorted(a):
        if a[key].shape != b[key].shape:
            sys.exit("%s: shape %s vs %s" % (key, tuple(a[key].shape), tuple(b[key].shape)))
        diff = (a[key].float() - b[key].float()).abs().max().item()
        same = torch.equal(a[key], b[key]) if atol is None else (
            diff <= atol and torch.equal(a[key].argmax(-1), b[key].argmax(-1)))
        if not same:
            print("%s differs: max abs diff %g" % (key, diff))
            sys.exit(1)
        steps += a[key].shape[0]
    print("%d logits tensors (%d steps) %s" % (
        len(a), steps,
        "bitwise equal" if atol is None else "within %g, same greedy tokens" % atol))


if __name__ == "__main__":
    main()

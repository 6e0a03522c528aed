"""Compares the logits two nns-run runs dumped (--dump-logits): every tensor bit for bit.

usage: lanes_check.py A.safetensors B.safetensors

Prints "N logits tensors (S steps) bitwise equal" or the first difference, and exits 1 on a
difference.
"""

import sys

import torch
from safetensors.torch import load_file


def main():
    a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
    if a.keys() != b.keys():
        sys.exit("different tensors: %s vs %s" % (sorted(a), sorted(b)))
    steps = 0
    for key in sorted(a):
        if a[key].shape != b[key].shape:
            sys.exit("%s: shape %s vs %s" % (key, tuple(a[key].shape), tuple(b[key].shape)))
        if not torch.equal(a[key], b[key]):
            diff = (a[key].float() - b[key].float()).abs().max().item()
            print("%s differs: max abs diff %g" % (key, diff))
            sys.exit(1)
        steps += a[key].shape[0]
    print("%d logits tensors (%d steps) bitwise equal" % (len(a), steps))


if __name__ == "__main__":
    main()

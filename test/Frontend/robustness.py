"""Feeds nnsc truncated prefixes and random mutations of every canonical program and checks that
it never crashes: each run must exit with 0 (accepted) or 1 (diagnosed), never a signal.

All variants go into one file split at '# -----' so that one process checks thousands of them
(nnsc compiles each chunk on its own, so a crash in any chunk still kills the process).
"""
import glob
import os
import random
import subprocess
import sys

nnsc, examples, model, workdir = sys.argv[1:5]
rng = random.Random(1234)
ALPHABET = list("abcdeilmnoprstuxy_[]().,:;=+-*/@<>!{}#\n 0123456789") + [
    "layers", "trace", "for", "in", "steps", "step", "if", "else", "invoke", "param",
    ".output", ".input", ".skip(", ".save()", "stop()", "cache(", "logits", "-1", "..", "\"",
    "\\\n", "f32[hidden]", "not", "and", "é", "\t"]


def mutate(text):
    chars = list(text)
    for _ in range(rng.randint(1, 6)):
        op = rng.random()
        pos = rng.randint(0, len(chars))
        if op < 0.4 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op < 0.8:
            chars.insert(pos, rng.choice(ALPHABET))
        elif chars:
            chars[min(pos, len(chars) - 1)] = rng.choice(ALPHABET)
    return "".join(chars)


variants = []
for path in sorted(glob.glob(os.path.join(examples, "*.nns"))):
    text = open(path).read()
    variants += [text[:n] for n in range(len(text) + 1)]
    variants += [mutate(text) for _ in range(150)]
    variants.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 200))))
variants = [v for v in variants if "# -----" not in v]

chunks = os.path.join(workdir, "robustness-chunks.nns")
with open(chunks, "w") as f:
    f.write("\n# -----\n".join(variants) + "\n")
with open(os.path.join(workdir, "robustness-bytes.nns"), "wb") as f:
    f.write(b"trace { x = \xff\xfe layers[0].output }\n\x00\x80")

failures = 0
for args in ([chunks, "--split-input-file"],
             [chunks, "--split-input-file", "-emit=ast"],
             [os.path.join(workdir, "robustness-bytes.nns")]):
    proc = subprocess.run([nnsc, *args, "--model", model], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    if proc.returncode not in (0, 1):
        failures += 1
        print(f"nnsc {' '.join(args)}: exit code {proc.returncode}")
        print(proc.stderr.decode(errors="replace")[-2000:])
print(f"{len(variants)} variants, {failures} crashes")
sys.exit(1 if failures else 0)

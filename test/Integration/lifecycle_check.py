"""finish(), stop() and a failing kernel end their requests, in batches mixing plain requests.

Usage: lifecycle_check.py NNS_RUN MODEL_DIR FIN.nnsb STOP.nnsb ERR.nnsb WORKDIR

Every run has the same four prompts, prompt 2 running plain; the reference is a plain run of
all four (greedy, --ignore-eos, STEPS tokens).
- FIN (`for step in steps[2:3] { t = logits.argmax().save(); finish() }`): bundled requests
  end after step 2 with the plain run's first 3 tokens, `t.2` equal to the third token.
- STOP (a probe that saves `score` and calls stop()): bundled requests end in their prefill
  with no token, `score` saved; nns-run exits 0.
- ERR (`h = layers[1].output[6].save()`): prompts shorter than 7 tokens fail in their
  prefill (no token, the kernel's message in <i>.json and on stderr, exit 1); the longer
  bundled prompt saves `h` and generates as the plain run does.
Plain requests always equal the plain run.
"""
import json
import os
import subprocess
import sys

from safetensors.torch import load_file

NNS_RUN, MODEL, FIN, STOP, ERR, WORK = sys.argv[1:7]
STEPS = 6
PROMPTS = [[1, 5, 9, 14], [3, 7, 11, 19, 23, 29, 31, 37], [2, 4, 8], [6, 10, 12, 16, 18]]
PLAIN = 2


def run(bundle, name, extra=()):
    lines = [json.dumps({"ids": ids, "bundle": i != PLAIN}) for i, ids in enumerate(PROMPTS)]
    prompts = os.path.join(WORK, name + ".jsonl")
    with open(prompts, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(WORK, name)
    cmd = [NNS_RUN, "--model", MODEL, "--prompts", prompts, "--max-tokens", str(STEPS),
           "--ignore-eos", "--save-dir", out, "--quiet"] + list(extra)
    if bundle:
        cmd += ["--bundle", bundle]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    results = [(load_file(os.path.join(out, f"{i}.safetensors")),
                json.load(open(os.path.join(out, f"{i}.json")))) for i in range(len(PROMPTS))]
    return proc, results


def main():
    # The reference: every prompt plain (--json, no bundle).
    lines = [json.dumps({"ids": ids}) for ids in PROMPTS]
    path = os.path.join(WORK, "ref.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run([NNS_RUN, "--model", MODEL, "--prompts", path, "--max-tokens",
                          str(STEPS), "--ignore-eos", "--json", "--quiet"],
                         capture_output=True, text=True, check=True).stdout
    ref = [json.loads(line)["ids"] for line in out.splitlines()]
    assert all(len(r) == STEPS for r in ref), ref

    proc, res = run(FIN, "fin")
    assert proc.returncode == 0, proc.stderr
    for i, (saves, meta) in enumerate(res):
        if i == PLAIN:
            assert meta["ids"] == ref[i] and meta["finish_reason"] == "length", meta
            continue
        assert meta["ids"] == ref[i][:3], (i, meta["ids"], ref[i])
        assert meta["finish_reason"] == "stop", meta
        assert sorted(saves) == ["t.2"] and int(saves["t.2"]) == ref[i][2], (i, saves)
    print("finish: bundled requests end after step 2 with the plain run's first 3 tokens, "
          "plain request unchanged")

    proc, res = run(STOP, "stop")
    assert proc.returncode == 0, proc.stderr
    for i, (saves, meta) in enumerate(res):
        if i == PLAIN:
            assert meta["ids"] == ref[i], meta
            continue
        assert meta["ids"] == [] and meta["finish_reason"] == "stop", (i, meta)
        assert list(saves["score"].shape) == [len(PROMPTS[i])], (i, saves)
    print("stop: bundled requests end in their prefill with their probe saved, "
          "plain request unchanged")

    proc, res = run(ERR, "err")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    failed = 0
    for i, (saves, meta) in enumerate(res):
        if i == PLAIN:
            assert meta["ids"] == ref[i] and "error" not in meta, meta
            continue
        if len(PROMPTS[i]) < 7:
            assert meta["ids"] == [] and meta["finish_reason"] == "error", (i, meta)
            assert meta["error"], meta
            assert f"nns-run: error: request {i}: {meta['error']}" in proc.stderr, proc.stderr
            assert not saves, saves
            failed += 1
        else:
            assert meta["ids"] == ref[i] and "error" not in meta, (i, meta)
            assert list(saves["h"].shape) == [64], saves
    assert failed == 2, failed
    print(f"error: {failed} failing requests end in their prefill with the kernel's message "
          f"in N.json and on stderr, the others unchanged")


if __name__ == "__main__":
    main()

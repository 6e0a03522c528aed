"""stop() in one invoke ends that invoke's prompt only; max_tokens 0 runs a prompt pass alone.

Usage: invoke_stop_check.py NNS_RUN MODEL_DIR STOP.nnsb NOSTOP.nnsb WORKDIR

An ActAdd-like trace: invoke `source` reads layer 1's last row (and in STOP calls stop()),
invoke `target` adds 4x that row to its own layer 1 last row and saves its argmax per step.
Four requests (8 prompts, taken two at a time), greedy, --ignore-eos, STEPS tokens:
- STOP: each source ends in its prefill (no token, finish_reason "stop"); each target runs its
  STEPS tokens ("length"), equal to transformers steered the same way (a forward hook adding
  4 h at the target's last prompt position, h the source's plain layer 1 row), different from
  the target's plain tokens (the steering value arrived), `top.<k>` equal to the tokens.
- NOSTOP: the sources generate STEPS tokens, the targets the same tokens as under STOP.
- NOSTOP with the sources at "max_tokens": 0: the sources generate nothing ("length"), the
  targets the same tokens again.
- STOP under a cache so small that running requests are preempted (and restart, the parked
  source with them): the same tokens and saves.
"""
import json
import os
import re
import subprocess
import sys

import torch
from safetensors.torch import load_file
from transformers import LlamaForCausalLM

NNS_RUN, MODEL, STOP, NOSTOP, WORK = sys.argv[1:6]
STEPS = 14
LAYER, SCALE = 1, 4.0
PROMPTS = [[1, 5, 9, 14, 3, 8], [3, 7, 11, 19, 23, 29, 31, 37], [2, 4, 8, 16, 32],
           [6, 10, 12, 16, 18, 20, 22], [9, 8, 7, 6, 5, 4, 3], [11, 13, 17, 19, 23],
           [40, 41, 42, 43, 44, 45], [50, 60, 70, 80, 90, 100, 110]]
SMALL = ["--block-size", "4", "--num-blocks", "16", "--max-model-len", "64"]


def run(bundle, name, source_tokens=None, extra=()):
    lines = []
    for i, ids in enumerate(PROMPTS):
        line = {"ids": ids}
        if i % 2 == 0 and source_tokens is not None:
            line["max_tokens"] = source_tokens
        lines.append(json.dumps(line))
    prompts = os.path.join(WORK, name + ".jsonl")
    with open(prompts, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(WORK, name)
    cmd = [NNS_RUN, "--model", MODEL, "--prompts", prompts, "--max-tokens", str(STEPS),
           "--ignore-eos", "--bundle", bundle, "--save-dir", out] + list(extra)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    preemptions = int(re.search(r"preemptions (\d+)", proc.stderr).group(1))
    results = [(load_file(os.path.join(out, f"{i}.safetensors")),
                json.load(open(os.path.join(out, f"{i}.json")))) for i in range(len(PROMPTS) // 2)]
    return preemptions, results


def invokes(meta):
    source, target = meta["invokes"]
    assert source["name"] == "source" and target["name"] == "target", meta
    return source, target


def reference(model, source, target):
    """Greedy tokens of `target` with layer LAYER's output at its last prompt position
    increased by SCALE times the source's plain value there (every forward recomputes the
    whole sequence, so the hook applies at every step, as the engine's cached K/V does)."""
    with torch.no_grad():
        states = model(torch.tensor([source]), output_hidden_states=True).hidden_states
    h = states[LAYER + 1][0, -1].clone()

    def steer(module, args, output):
        hidden = (output[0] if isinstance(output, tuple) else output).clone()
        hidden[0, len(target) - 1] += SCALE * h
        return (hidden,) + tuple(output[1:]) if isinstance(output, tuple) else hidden

    def greedy(hooked):
        handle = model.model.layers[LAYER].register_forward_hook(steer) if hooked else None
        seq = list(target)
        try:
            with torch.no_grad():
                for _ in range(STEPS):
                    seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
        finally:
            if handle:
                handle.remove()
        return seq[len(target):]

    return greedy(True), greedy(False)


def main():
    model = LlamaForCausalLM.from_pretrained(MODEL, torch_dtype=torch.float32).eval()
    _, stopped = run(STOP, "stop")
    steered = []
    for i, (saves, meta) in enumerate(stopped):
        source, target = invokes(meta)
        assert source["ids"] == [] and source["finish_reason"] == "stop", (i, source)
        assert len(target["ids"]) == STEPS and target["finish_reason"] == "length", (i, target)
        assert meta["finish_reason"] == "length", (i, meta)
        want, plain = reference(model, PROMPTS[2 * i], PROMPTS[2 * i + 1])
        assert target["ids"] == want, (i, target["ids"], want)
        assert want != plain, (i, "the steering changes nothing: the test could not fail")
        assert sorted(saves) == sorted(f"top.{k}" for k in range(STEPS)), (i, sorted(saves))
        assert [int(saves[f"top.{k}"]) for k in range(STEPS)] == target["ids"], (i, saves)
        steered.append(target["ids"])
    print(f"stop: {len(stopped)} requests, sources stopped in their prefill, targets generate "
          f"{STEPS} tokens equal to transformers steered by the source's value")

    _, whole = run(NOSTOP, "nostop")
    for i, (_, meta) in enumerate(whole):
        source, target = invokes(meta)
        assert len(source["ids"]) == STEPS, (i, source)
        assert target["ids"] == steered[i], (i, target["ids"], steered[i])
    print("no stop: sources generate too, targets' tokens unchanged")

    _, probes = run(NOSTOP, "zero", source_tokens=0)
    for i, (_, meta) in enumerate(probes):
        source, target = invokes(meta)
        assert source["ids"] == [] and source["finish_reason"] == "length", (i, source)
        assert target["ids"] == steered[i], (i, target["ids"], steered[i])
    print("max_tokens 0: sources run their prompt pass only, targets' tokens unchanged")

    preemptions, small = run(STOP, "stop-small", extra=SMALL)
    assert preemptions > 0, "the small cache preempted nothing"
    for i, ((saves, meta), (saves_big, _)) in enumerate(zip(small, stopped)):
        source, target = invokes(meta)
        assert source["ids"] == [] and target["ids"] == steered[i], (i, meta)
        assert sorted(saves) == sorted(saves_big), (i, sorted(saves))
        assert all(torch.equal(saves[k], saves_big[k]) for k in saves), i
    print("preemption: stopped sources restart with their targets, tokens and saves unchanged")


main()

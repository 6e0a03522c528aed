"""nns-run with compiled bundles on SmolLM2 against NNsight 0.8.1 / transformers.

Usage: bundle_check.py NNS_RUN GGUF STEER.nnsb CAPTURE.nnsb WORKDIR

- capture.nnsb, trace 'lens': the last row of model.layers.3.output saved at every step
  ('h.<step>'); compared with NNsight's generate loop reading the same site.
- lens.nns, `trace { h = layers[3].output[-1].save() }`, through --trace (compiled by nnsc):
  'h' equals NNsight's value at the prompt's last position.
- steer.nnsb: model.layers.0.output += vec, with the default vec and with a vec from a
  safetensors file; greedy tokens compared with transformers under a forward hook that adds
  the same vector.
Both runs mix plain requests into the batch; those must equal the unsteered reference.
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from reference import load_gguf_reference  # noqa: E402

NNS_RUN, GGUF, STEER, CAPTURE, WORK = sys.argv[1:6]
STEPS = 6
PROMPTS = [[1, 504, 3458, 314, 4649, 314], [1, 9690, 28, 2683, 1151],
           [1, 2030, 1453, 282, 253, 1352, 29, 378]]


def run_nns(bundle, out_dir, extra, plain):
    """Runs every prompt; prompts whose index is in `plain` run without the bundle."""
    lines = [json.dumps({"ids": ids, "bundle": i not in plain}) for i, ids in enumerate(PROMPTS)]
    prompts = os.path.join(WORK, os.path.basename(out_dir) + ".jsonl")
    with open(prompts, "w") as f:
        f.write("\n".join(lines) + "\n")
    cmd = [NNS_RUN, "--model", GGUF, "--prompts", prompts] + (["--bundle", bundle] if bundle else [])
    cmd += ["--max-tokens", str(STEPS), "--ignore-eos", "--save-dir", out_dir, "--quiet"] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return [(load_file(os.path.join(out_dir, f"{i}.safetensors")),
             json.load(open(os.path.join(out_dir, f"{i}.json")))) for i in range(len(PROMPTS))]


def greedy(model, ids, hook_vec=None):
    handle = None
    if hook_vec is not None:
        def add(module, args, output):
            if isinstance(output, tuple):
                return (output[0] + hook_vec,) + tuple(output[1:])
            return output + hook_vec
        handle = model.model.layers[0].register_forward_hook(add)
    seq = list(ids)
    try:
        with torch.no_grad():
            for _ in range(STEPS):
                seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    finally:
        if handle:
            handle.remove()
    return seq[len(ids):]


def main():
    model, tok = load_gguf_reference(GGUF)
    from nnsight import LanguageModel
    lm = LanguageModel(model, tokenizer=tok)
    plain_tokens = [greedy(model, ids) for ids in PROMPTS]

    # Capture: NNsight reads layers[3].output's last row at every generation step.
    results = run_nns(CAPTURE, os.path.join(WORK, "lens"), ["--trace-name", "lens"], plain={1})
    worst = 0.0
    saves = 0
    for i, ids in enumerate(PROMPTS):
        tensors, meta = results[i]
        assert meta["ids"] == plain_tokens[i], (i, meta["ids"], plain_tokens[i])
        if i == 1:
            assert not tensors and meta["bundled"] is False, (tensors.keys(), meta)
            continue
        with lm.generate([ids], max_new_tokens=STEPS, do_sample=False) as tracer:
            hs = list().save()
            for step in tracer.iter[0:STEPS]:
                hs.append(lm.model.layers[3].output[0, -1].clone())
        assert sorted(tensors) == sorted(f"h.{s}" for s in range(STEPS)), sorted(tensors)
        for s in range(STEPS):
            ref = hs[s].float()
            got = tensors[f"h.{s}"]
            assert got.shape == ref.shape, (got.shape, ref.shape)
            assert torch.allclose(got, ref, rtol=1e-3, atol=1e-3), (i, s, (got - ref).abs().max())
            worst = max(worst, float((got - ref).abs().max()))
            saves += 1
    print(f"lens: {saves} per-step saves equal nnsight's within 1e-3 (max abs diff {worst:.2e}),"
          f" greedy identical, plain request unchanged")

    # The same read written in the language: nns-run --trace compiles it with nnsc.
    source = os.path.join(WORK, "lens.nns")
    with open(source, "w") as f:
        f.write("trace { h = layers[3].output[-1].save() }\n")
    results = run_nns(None, os.path.join(WORK, "lens-nns"), ["--trace", source], plain={2})
    for i in (0, 1):
        with lm.trace([PROMPTS[i]]):
            ref = lm.model.layers[3].output[0, -1].save()
        got = results[i][0]["h"]
        assert results[i][1]["ids"] == plain_tokens[i], (i, results[i][1]["ids"])
        assert torch.allclose(got, ref.float(), rtol=1e-3, atol=1e-3), (got - ref).abs().max()
    assert not results[2][0]
    print("lens.nns: --trace compiled on the fly, saves equal nnsight's within 1e-3")

    # Steering with the manifest default (0.5 everywhere) and with a param file.
    hidden = model.config.hidden_size
    default = torch.full((hidden,), 0.5)
    results = run_nns(STEER, os.path.join(WORK, "steer-default"), [], plain={2})
    for i, ids in enumerate(PROMPTS):
        expect = plain_tokens[i] if i == 2 else greedy(model, ids, default)
        assert results[i][1]["ids"] == expect, (i, results[i][1]["ids"], expect)
    vec = torch.randn(hidden, generator=torch.Generator().manual_seed(0)) * 2.0
    save_file({"direction": vec, "other": torch.zeros(3)}, os.path.join(WORK, "vec.safetensors"))
    results = run_nns(STEER, os.path.join(WORK, "steer-file"),
                      ["--param", "vec=@" + os.path.join(WORK, "vec.safetensors") + ":direction"],
                      plain={0})
    changed = 0
    for i, ids in enumerate(PROMPTS):
        expect = plain_tokens[i] if i == 0 else greedy(model, ids, vec)
        assert results[i][1]["ids"] == expect, (i, results[i][1]["ids"], expect)
        changed += i != 0 and expect != plain_tokens[i]
    assert changed > 0, "the steering vector changed no completion"
    print(f"steer: default and file params give transformers' steered greedy tokens "
          f"({changed} of 2 completions changed), plain requests unchanged")


if __name__ == "__main__":
    main()

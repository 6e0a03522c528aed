"""A multi-invoke trace (examples/canonical/11-patching.nns: clean -> corrupt activation
patching) run by nns-run on SmolLM2 against NNsight 0.8.1 and transformers.

Usage: invoke_check.py NNS_RUN GGUF PATCHING.nns WORKDIR

Two requests of two prompts each (four prompts, taken two at a time: clean then corrupt).
- The save `diff` (logits[tok_a] - logits[tok_b] of the patched corrupt prompt) equals
  NNsight's value from a trace with the same two invokes, within rtol 1e-3.
- Greedy tokens: the clean prompt's are transformers' plain ones, the corrupt prompt's are
  transformers' with layer 6's output at position 5 replaced by the clean value (a forward
  hook), and both invokes ran the same number of steps.
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from reference import load_gguf_reference  # noqa: E402

NNS_RUN, GGUF, SOURCE, WORK = sys.argv[1:5]
STEPS = 4
LAYER, POS = 6, 5
TOK_A, TOK_B = 314, 28
# Equal lengths, so NNsight's batching of the invokes needs no padding.
# The prompts of a request differ at the patched position.
REQUESTS = [([1, 504, 3458, 314, 282, 4649, 2030], [1, 504, 3458, 314, 282, 9690, 2030]),
            ([1, 2030, 1453, 282, 253, 1352, 29, 378], [1, 2030, 1453, 282, 253, 28, 29, 378])]


def greedy(model, ids, patch=None):
    handle = None
    if patch is not None:
        def replace(module, args, output):
            hidden = output[0] if isinstance(output, tuple) else output
            hidden = hidden.clone()
            hidden[0, POS] = patch
            return (hidden,) + tuple(output[1:]) if isinstance(output, tuple) else hidden
        handle = model.model.layers[LAYER].register_forward_hook(replace)
    seq = list(ids)
    try:
        with torch.no_grad():
            for _ in range(STEPS):
                seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    finally:
        if handle:
            handle.remove()
    return seq[len(ids):]


def patched_diff(lm, clean, corrupt):
    """NNsight: the clean layer output at POS into the corrupt prompt; its saved logit diff.
    A function of its own, so no name from an earlier trace is visible to the invokes."""
    # NNsight 0.8 runs invokes apart; a barrier makes the clean value visible to the next.
    with lm.trace() as tracer:
        barrier = tracer.barrier(2)
        with tracer.invoke([clean]):
            h = lm.model.layers[LAYER].output[0, POS].clone().save()
            barrier()
        with tracer.invoke([corrupt]):
            barrier()
            lm.model.layers[LAYER].output[0, POS] = h
            logits = lm.lm_head.output[0, -1]
            diff = (logits[TOK_A] - logits[TOK_B]).save()
    return h, diff


def main():
    model, tok = load_gguf_reference(GGUF)
    from nnsight import LanguageModel
    lm = LanguageModel(model, tokenizer=tok)

    path = os.path.join(WORK, "prompts.jsonl")
    with open(path, "w") as f:
        for clean, corrupt in REQUESTS:
            f.write(json.dumps({"ids": clean}) + "\n" + json.dumps({"ids": corrupt}) + "\n")
    out = os.path.join(WORK, "out")
    subprocess.run([NNS_RUN, "--model", GGUF, "--trace", SOURCE, "--prompts", path,
                    "--param", f"tok_a={TOK_A}", "--param", f"tok_b={TOK_B}",
                    "--max-tokens", str(STEPS), "--ignore-eos", "--save-dir", out, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    assert not os.path.exists(os.path.join(out, f"{len(REQUESTS)}.json"))

    worst = 0.0
    for r, (clean, corrupt) in enumerate(REQUESTS):
        saves = load_file(os.path.join(out, f"{r}.safetensors"))
        meta = json.load(open(os.path.join(out, f"{r}.json")))
        h, diff = patched_diff(lm, clean, corrupt)
        with lm.trace([corrupt]):
            plain = lm.lm_head.output[0, -1].save()
        unpatched = float(plain[TOK_A] - plain[TOK_B])
        assert abs(float(diff) - unpatched) > 1e-2, "the patch does not change the logits"
        got, ref = saves["diff"], diff.detach().float()
        assert got.shape == ref.shape, (got.shape, ref.shape)
        assert torch.allclose(got, ref, rtol=1e-3, atol=1e-3), (r, float(got), float(ref))
        worst = max(worst, float((got - ref).abs().max()))

        names = [i["name"] for i in meta["invokes"]]
        assert names == ["clean", "corrupt"], names
        ids = [i["ids"] for i in meta["invokes"]]
        assert ids[0] == greedy(model, clean), (r, ids[0])
        assert ids[1] == greedy(model, corrupt, h.detach()), (r, ids[1])
        assert len(ids[0]) == len(ids[1]) == STEPS, ids
    print(f"patching: {len(REQUESTS)} requests of invokes clean/corrupt, diff equals nnsight's "
          f"within 1e-3 (max abs diff {worst:.2e}), greedy tokens identical to transformers "
          f"patched the same way")


if __name__ == "__main__":
    main()

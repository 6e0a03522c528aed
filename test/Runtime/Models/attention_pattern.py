"""Every layer's attention pattern from nns-run equals transformers' eager attention weights.

nns-run caches `layers[*].self_attn.pattern` in the prompt pass and the first generation step;
transformers (attn_implementation="eager", output_attentions=True) runs the prompt, then the
prompt plus the generated token, on the same GGUF weights: the prompt pass must equal the
weights of the first run, the generation step (one query over the whole context) the last query
row of the second.

usage: attention_pattern.py NNS_RUN GGUF WORKDIR
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
from reference import load_gguf_reference  # noqa: E402

PROMPT = [504, 414, 46682, 18669, 314, 3807, 281]  # The Eiffel Tower is located in
ATOL = 2e-3


def main():
    nns_run, gguf, work = sys.argv[1], sys.argv[2], sys.argv[3]
    program = os.path.join(work, "patterns.nns")
    with open(program, "w") as f:
        f.write("trace { for step in steps[0:2] { cache(layers[*].self_attn.pattern) } }\n")
    out = os.path.join(work, "out")
    subprocess.run([nns_run, "--model", gguf, "--trace", program, "--prompt-ids",
                    ",".join(map(str, PROMPT)), "--max-tokens", "2", "--temperature", "0",
                    "--save-dir", out, "--quiet"], check=True)
    saves = load_file(os.path.join(out, "0.safetensors"))
    ids = json.load(open(os.path.join(out, "0.json")))["ids"]

    model, _ = load_gguf_reference(gguf)
    model.set_attn_implementation("eager")
    with torch.no_grad():
        prompt = model(torch.tensor([PROMPT]), output_attentions=True).attentions
        longer = model(torch.tensor([PROMPT + ids[:1]]), output_attentions=True).attentions
    worst, count = 0.0, 0
    for layer in range(model.config.num_hidden_layers):
        name = f"model.layers.{layer}.self_attn.pattern"
        for step, want in ((0, prompt[layer][0]), (1, longer[layer][0, :, -1:])):
            got = saves[f"{name}.{step}"]
            assert got.shape == want.shape, (name, step, list(got.shape), list(want.shape))
            diff = float((got - want).abs().max())
            assert diff <= ATOL, f"{name}.{step} differs by {diff:.3e}"
            worst, count = max(worst, diff), count + 1
    print(f"attention patterns: {count} (30 layers, prompt pass [9, 7, 7] and generation step "
          f"[9, 1, 8]) equal transformers' eager attention weights within {ATOL} "
          f"(max abs diff {worst:.1e})")


if __name__ == "__main__":
    main()

"""Checks nnsc's site table against real transformers hooks.

For a tiny random model of each architecture, registers a forward pre-hook and a forward hook on
every module, runs one forward pass over T tokens, and records the order in which hooks fire and
the shape of each module's first input and of its output (first element of a tuple). Models run
eager attention, and each attention's softmax is recorded as `<self_attn>.pattern` with the
probabilities' shape. The result must equal `nnsc --print-sites --model DIR` (special phases
excluded, T and S substituted: S = T without a cache). One known difference: Gemma 3's
q_norm/k_norm hooks see [heads, T, head_dim] (transformers transposes before the norm); nnsc's
sites are [T, heads, head_dim] as on Qwen3 (docs/Models.md), so those shapes are compared
transposed.

usage: site_order.py NNSC WORKDIR
"""
import subprocess
import sys
from pathlib import Path

import torch
import transformers

T = 5


def tiny_config(arch):
    common = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=300,
                  max_position_embeddings=128)
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "qwen2":
        return transformers.Qwen2Config(**common)
    if arch == "qwen3":
        return transformers.Qwen3Config(head_dim=24, **common)
    if arch == "mistral":
        return transformers.MistralConfig(**common)
    if arch == "gemma3":
        # Two layers, pattern 2: a local and a global one.
        return transformers.Gemma3TextConfig(head_dim=16, sliding_window=3,
                                             sliding_window_pattern=2, **common)
    raise ValueError(arch)


def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        return value[0]
    return None


def hooked_order(model):
    events = []
    attention = []  # the self_attn module running now

    def shape_of(t):
        # Drop the batch dimension: sites are per sequence.
        return list(t.shape[1:])

    for name, module in model.named_modules():
        if not name or name == "model" or name.endswith("rotary_emb"):
            continue

        def pre(mod, args, kwargs, name=name):
            x = args[0] if args else next(iter(kwargs.values()), None)
            x = first_tensor(x)
            if x is None:
                x = first_tensor(kwargs.get("hidden_states"))
            events.append((name + ".input", shape_of(x)))
            if name.endswith(".self_attn"):
                attention.append(name)

        def post(mod, args, kwargs, out, name=name):
            events.append((name + ".output", shape_of(first_tensor(out))))

        module.register_forward_pre_hook(pre, with_kwargs=True)
        module.register_forward_hook(post, with_kwargs=True)
    softmax = torch.nn.functional.softmax

    def recording_softmax(x, *args, **kwargs):
        # eager_attention_forward's softmax of the scores [batch, heads, T, S].
        events.append((attention[-1] + ".pattern", shape_of(x)))
        return softmax(x, *args, **kwargs)

    torch.nn.functional.softmax = recording_softmax
    try:
        with torch.no_grad():
            model(torch.arange(T).unsqueeze(0))
    finally:
        torch.nn.functional.softmax = softmax
    return events


def nnsc_order(nnsc, model_dir):
    out = subprocess.run([nnsc, "--print-sites", "--model", str(model_dir)],
                         check=True, capture_output=True, text=True).stdout
    events = []
    for line in out.splitlines():
        _, path, rest = line.split(" ", 2)
        if path in ("logits", "samples", "result"):
            continue
        shape = rest[1:rest.index("]")]
        dims = [T if d in ("T", "S") else int(d) for d in shape.split(", ") if d]
        events.append((path, dims))
    return events


def main():
    nnsc, workdir = sys.argv[1], Path(sys.argv[2])
    failures = 0
    for arch in ("llama", "qwen2", "qwen3", "mistral", "gemma3"):
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(
            tiny_config(arch), attn_implementation="eager").eval()
        model_dir = workdir / arch
        model.save_pretrained(model_dir)
        want = hooked_order(model)
        if arch == "gemma3":
            want = [(n, [d[1], d[0], d[2]] if n.endswith(("q_norm.input", "q_norm.output",
                                                            "k_norm.input", "k_norm.output"))
                     else d) for n, d in want]
        got = nnsc_order(nnsc, model_dir)
        if want == got:
            print(f"{arch}: {len(got)} sites match transformers hook order and shapes")
            continue
        failures += 1
        print(f"{arch}: MISMATCH ({len(got)} nnsc sites, {len(want)} hooks)")
        for i, (w, g) in enumerate(zip(want, got)):
            if w != g:
                print(f"  first difference at {i}: transformers {w}, nnsc {g}")
                break
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

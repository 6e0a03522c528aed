"""Reference side of the model tests: transformers on the same weights.

  model_check.py tiny NNS_RUN WORKDIR     tiny random Llama/Qwen2/Qwen3/Mistral models
  model_check.py smollm NNS_RUN WORKDIR GGUF [NNS_RUN_ARG...]
                                              SmolLM2-135M from the GGUF (dequantized by
                                              transformers), nns-run given the extra arguments
  model_check.py gemma3 NNS_RUN WORKDIR GGUF SRC_ROOT
                                              Gemma 3 270M from the GGUF: short prompts and one
                                              over 1,500 tokens (past the 512-token window),
                                              batched and one at a time
  model_check.py batching NNS_RUN WORKDIR     64 concurrent requests vs one at a time, prefix hits
  model_check.py hooks NNS_RUN WORKDIR        site values and replacements vs transformers hooks

Each mode writes models/prompts into WORKDIR, runs nns-run, and compares with transformers:
logits of every generated step against a transformers forward over prompt + completion
(fp32 max abs difference <= 1e-3), and nns-run's greedy tokens against transformers' argmax
at every position (so the greedy continuations are identical).
"""

import json
import os
import random
import subprocess
import sys

import torch
import transformers
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
import reference  # noqa: E402

TOL = 1e-3


def run_nns(nns_run, model, prompts, workdir, name, extra=()):
    """Runs nns-run on prompts (lists of ids); returns (results by request, logits, stderr)."""
    jsonl = os.path.join(workdir, name + ".jsonl")
    with open(jsonl, "w") as f:
        for ids in prompts:
            f.write(json.dumps({"ids": ids}) + "\n")
    dump = os.path.join(workdir, name + ".logits.safetensors")
    cmd = [nns_run, "--model", model, "--prompts", jsonl, "--json", "--temperature", "0",
           "--ignore-eos", "--dump-logits", dump, *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("nns-run failed (%s):\n%s" % (" ".join(cmd), proc.stderr))
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    results.sort(key=lambda r: r["request"])
    return results, load_file(dump), proc.stderr


def compare(label, hf_model, prompts, results, logits):
    """Teacher-forced transformers forward over prompt + completion for every request."""
    worst, worst_margin = 0.0, float("inf")
    for i, (ids, res) in enumerate(zip(prompts, results)):
        out = res["ids"]
        full = torch.tensor([ids + out])
        with torch.no_grad():
            ref = hf_model(full).logits[0, len(ids) - 1:len(ids) + len(out) - 1].float()
        ours = torch.from_numpy(logits["logits.%d" % i])
        if ours.shape != ref.shape:
            sys.exit("%s: request %d: logits shape %s, transformers %s"
                     % (label, i, tuple(ours.shape), tuple(ref.shape)))
        diff = (ours - ref).abs().max().item()
        worst = max(worst, diff)
        greedy = ref.argmax(-1).tolist()
        if greedy != out:
            step = next(s for s in range(len(out)) if greedy[s] != out[s])
            top = ref[step].topk(2).values
            sys.exit("%s: request %d: token %d is %d, transformers' argmax is %d (margin %.3g)"
                     % (label, i, step, out[step], greedy[step], (top[0] - top[1]).item()))
        top2 = ref.topk(2, dim=-1).values
        worst_margin = min(worst_margin, (top2[:, 0] - top2[:, 1]).min().item())
    if worst > TOL:
        sys.exit("%s: max abs logits difference %.3g > %g" % (label, worst, TOL))
    print("%s: %d prompts x %d tokens, max abs logits diff %.2e <= %g, greedy identical"
          " (smallest top-2 margin %.2e)" % (label, len(prompts), len(results[0]["ids"]),
                                             worst, TOL, worst_margin))


def tiny_configs():
    common = dict(vocab_size=384, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  initializer_range=0.3, rms_norm_eps=1e-6)
    return {
        "llama": transformers.LlamaConfig(**common, rope_parameters={
            "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64}),
        "qwen2": transformers.Qwen2Config(**common, tie_word_embeddings=True, rope_parameters={
            "rope_type": "linear", "rope_theta": 1000000.0, "factor": 2.0}),
        "qwen3": transformers.Qwen3Config(**common, head_dim=32),
        "mistral": transformers.MistralConfig(**common, sliding_window=None),
        # A window of 8 so that prompts of up to 70 tokens cross it; query scaling other than
        # head_dim; a local and a global layer of three.
        "gemma3": transformers.Gemma3TextConfig(**common, head_dim=32, sliding_window=8,
                                                sliding_window_pattern=2,
                                                query_pre_attn_scalar=20),
    }


def make_tiny(kind, config, workdir):
    torch.manual_seed(1234)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    path = os.path.join(workdir, kind)
    model.save_pretrained(path)
    return model, path


def random_prompts(rng, vocab, count, lo, hi, shared=()):
    return [list(shared) + [rng.randrange(vocab) for _ in range(rng.randint(lo, hi))]
            for _ in range(count)]


def mode_tiny(nns_run, workdir):
    rng = random.Random(7)
    for kind, config in tiny_configs().items():
        model, path = make_tiny(kind, config, workdir)
        prompts = random_prompts(rng, config.vocab_size, 6, 1, 70)
        results, logits, _ = run_nns(nns_run, path, prompts, workdir, kind,
                                     ["--max-tokens", "12"])
        compare(kind, model, prompts, results, logits)


def mode_smollm(nns_run, workdir, gguf, extra=()):
    model, tok = reference.load_gguf_reference(gguf)
    texts = [
        "The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
        "The three primary colors are", "Water boils at", "import numpy as np\nx = np.",
        "The quick brown fox", "In 1969, humans first", "A haiku about the sea:",
        "To make a cup of tea, first", "The largest planet in our solar system is",
        "SELECT name FROM users WHERE", "Photosynthesis is the process by which",
        "My favourite book is", "1, 1, 2, 3, 5, 8,", "The meaning of life is",
        "Q: What is 12 times 7?\nA:", "Dear team,\nI wanted to", "The GPU is",
        "Rain in Spain falls mainly",
    ]
    prompts = [tok(t)["input_ids"] for t in texts]
    results, logits, _ = run_nns(nns_run, gguf, prompts, workdir, "smollm",
                                 ["--max-tokens", "64", *extra])
    compare("smollm2-135m", model, prompts, results, logits)


def outputs(results):
    return [r["ids"] for r in results]


def mode_gemma3(nns_run, workdir, gguf, src_root):
    """Gemma 3: local layers see the last 512 positions, so one prompt runs well past the
    window (docs/Engine.md as text); the prompts run together, then one at a time."""
    model, tok = reference.load_gguf_reference(gguf)
    texts = [
        "The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
        "Water boils at", "1, 1, 2, 3, 5, 8,", "Q: What is 12 times 7?\nA:",
    ]
    prompts = [tok(t)["input_ids"] for t in texts]
    with open(os.path.join(src_root, "docs", "Engine.md")) as f:
        long_ids = tok(f.read())["input_ids"][:1600]
    if len(long_ids) < 1500:
        sys.exit("docs/Engine.md gives only %d tokens; the window test needs 1500" % len(long_ids))
    prompts.append(long_ids)
    common = ["--max-tokens", "64", "--max-model-len", "2048"]
    results, logits, _ = run_nns(nns_run, gguf, prompts, workdir, "gemma3", common)
    compare("gemma3-270m", model, prompts, results, logits)
    alone, _, _ = run_nns(nns_run, gguf, prompts, workdir, "gemma3-alone",
                          common + ["--max-num-seqs", "1"])
    if outputs(alone) != outputs(results):
        sys.exit("gemma3: prompts run together differ from one at a time")
    print("gemma3-270m: %d prompts (%s tokens) together identical to one at a time"
          % (len(prompts), ", ".join(str(len(p)) for p in prompts)))


def mode_batching(nns_run, workdir):
    config = tiny_configs()["llama"]
    _, path = make_tiny("llama", config, workdir)
    rng = random.Random(11)
    prompts = random_prompts(rng, config.vocab_size, 64, 1, 120)
    common = ["--max-tokens", "24", "--max-model-len", "256"]
    together, _, _ = run_nns(nns_run, path, prompts, workdir, "together", common)
    alone, _, _ = run_nns(nns_run, path, prompts, workdir, "alone",
                          common + ["--max-num-seqs", "1"])
    # A KV cache of 40 blocks cannot hold 64 sequences: the scheduler preempts and recomputes.
    tight, _, _ = run_nns(nns_run, path, prompts, workdir, "tight",
                          common + ["--num-blocks", "40", "--block-size", "16"])
    if outputs(together) != outputs(alone):
        sys.exit("64 concurrent requests differ from one at a time")
    if outputs(tight) != outputs(alone):
        sys.exit("requests under preemption differ from one at a time")
    print("batching: 64 concurrent requests (prompts 1-120 tokens) identical to one at a time,"
          " also under KV-cache pressure")

    shared = [rng.randrange(config.vocab_size) for _ in range(80)]
    prefixed = random_prompts(rng, config.vocab_size, 12, 1, 30, shared)
    cached, _, err = run_nns(nns_run, path, prefixed, workdir, "cached",
                             common + ["--max-num-seqs", "2"])
    uncached, _, _ = run_nns(nns_run, path, prefixed, workdir, "uncached",
                             common + ["--max-num-seqs", "2", "--no-prefix-caching"])
    hits = int(err.rsplit("prefix cache hit tokens ", 1)[1].split()[0])
    if hits == 0:
        sys.exit("no prefix-cache hits for prompts sharing an 80-token prefix")
    if outputs(cached) != outputs(uncached):
        sys.exit("prefix-cache hits change the outputs")
    print("prefix cache: %d hit tokens, outputs identical to prefix caching off" % hits)


def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        return value[0]
    return None


def hf_sites(model, ids, scales):
    """Every module's input and output in hook firing order for one forward over `ids`, with
    `scales` ({site: factor}) applied by hooks that replace the value, registered first."""
    events, handles = [], []

    def register(name, module, kind, hook):
        if kind == "input":
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
        else:
            handles.append(module.register_forward_hook(hook, with_kwargs=True))

    def scaler(factor, kind):
        def pre(mod, args, kwargs):
            if args:
                return (args[0] * factor,) + tuple(args[1:]), kwargs
            return args, dict(kwargs, hidden_states=kwargs["hidden_states"] * factor)

        def post(mod, args, kwargs, out):
            if isinstance(out, tuple):
                return (out[0] * factor,) + tuple(out[1:])
            return out * factor
        return pre if kind == "input" else post

    modules = [(n, m) for n, m in model.named_modules()
               if n and n != "model" and not n.endswith("rotary_emb")]
    for name, module in modules:
        for kind in ("input", "output"):
            if name + "." + kind in scales:
                register(name, module, kind, scaler(scales[name + "." + kind], kind))
    for name, module in modules:
        def pre(mod, args, kwargs, name=name):
            x = first_tensor(args[0]) if args else first_tensor(kwargs.get("hidden_states"))
            events.append((name + ".input", x[0].detach().clone()))

        def post(mod, args, kwargs, out, name=name):
            events.append((name + ".output", first_tensor(out)[0].detach().clone()))
        register(name, module, "input", pre)
        register(name, module, "output", post)
    with torch.no_grad():
        model(torch.tensor([ids]))
    for handle in handles:
        handle.remove()
    return events


def mode_hooks(nns_run, workdir):
    """Every forward-pass site captured by nns-run (prefill and one decode step) equals the
    transformers hook value, sites fire in transformers' hook order, and values replaced at a
    few sites (input and output sites, residual and branch) flow as transformers hooks'."""
    rng = random.Random(5)
    scales = {"model.layers.0.self_attn.q_proj.input": 1.5,
              "model.layers.0.post_attention_layernorm.input": 0.5,
              "model.layers.1.mlp.output": 0.25,
              "model.layers.1.input": 2.0,
              "model.layers.1.mlp.up_proj.input": 3.0}
    for kind in ("qwen3", "llama", "gemma3"):
        config = tiny_configs()[kind]
        model, path = make_tiny(kind, config, workdir)
        prompts = random_prompts(rng, config.vocab_size, 2, 5, 20)
        save = os.path.join(workdir, kind + ".sites.safetensors")
        extra = ["--max-tokens", "2", "--capture", "all", "--save", save]
        for site, factor in scales.items():
            extra += ["--scale", "%s=%s" % (site, factor)]
        results, logits, _ = run_nns(nns_run, path, prompts, workdir, kind + "-hooks", extra)
        saved = load_file(save)
        order = sorted((int(v), k[:-len(".order")]) for k, v in saved.items()
                       if k.endswith(".order"))
        worst, count = 0.0, 0
        for i, ids in enumerate(prompts):
            full = ids + results[i]["ids"][:1]
            events = hf_sites(model, full, scales)
            if i == 0 and [n for n, _ in events] != [n for _, n in order]:
                sys.exit("%s: site firing order differs from transformers" % kind)
            for name, ref in events:
                ours = torch.from_numpy(saved["%s.%d" % (name, i)])
                if name.startswith("lm_head."):
                    ref = ref[len(ids) - 1:]
                if kind == "gemma3" and (".q_norm." in name or ".k_norm." in name):
                    # Gemma's hook sees [heads, T, head_dim]; nnsc's site is [T, heads, head_dim].
                    ref = ref.transpose(0, 1)
                ref = ref.float().reshape(ours.shape)
                worst = max(worst, (ours - ref).abs().max().item())
                count += 1
            ref_logits = events[-1][1][len(ids) - 1:]
            worst = max(worst, (torch.from_numpy(logits["logits.%d" % i]) - ref_logits)
                        .abs().max().item())
        if worst > TOL:
            sys.exit("%s: site values differ from transformers by %.3g" % (kind, worst))
        print("%s hooks: %d site values (prefill and decode, %d replaced sites) equal"
              " transformers' within %.2e, firing order identical" % (kind, count, len(scales),
                                                                     worst))


def main():
    mode, nns_run, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(2)
    if mode == "tiny":
        mode_tiny(nns_run, workdir)
    elif mode == "smollm":
        mode_smollm(nns_run, workdir, sys.argv[4], sys.argv[5:])
    elif mode == "gemma3":
        mode_gemma3(nns_run, workdir, sys.argv[4], sys.argv[5])
    elif mode == "hooks":
        mode_hooks(nns_run, workdir)
    elif mode == "batching":
        mode_batching(nns_run, workdir)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()

"""Three interpretability experiments on SmolLM2-135M with nnsc, notebook style (each `# %%`
is a cell; run the file, or open it in Jupyter/VS Code as a notebook):

  1. steering: add a direction to layer 12's residual stream on every generated token,
  2. capture: the last token's residual stream after every layer,
  3. logit lens: what each layer would predict if the model stopped there.

    .venv/bin/python examples/python/experiments.py [--max-tokens N]

The same experiments in NNsight are in docs/Python.md, side by side.
"""

# %%
import argparse

import torch

import nnsc

parser = argparse.ArgumentParser()
parser.add_argument("--max-tokens", type=int, default=12)
args = parser.parse_args()

llm = nnsc.LLM()  # the bundled SmolLM2-135M-Instruct (Q4_1 GGUF), fp32
prompts = ["The capital of France is", "My favourite food is"]

# %% 1. Steering: a "Paris" direction, read off the model itself (the residual stream of a
# prompt about Paris minus one about London, after layer 12), added to every generated token.
capture = llm.compile("trace { h = layers[12].output[-1].save() }")
paris, london = llm.generate(["I love Paris", "I love London"], capture, max_tokens=1,
                             use_tqdm=False)
direction = paris.saves["h"] - london.saves["h"]

steer = llm.compile("""
param steer: f32[hidden]
param alpha: f32 = 4.0
trace { for step in steps { layers[12].output += alpha * steer } }
""")
plain = llm.generate(prompts, max_tokens=args.max_tokens, temperature=0, use_tqdm=False)
steered = llm.generate(prompts, steer, {"steer": direction, "alpha": 2.0},
                       max_tokens=args.max_tokens, temperature=0, use_tqdm=False)
for p, a, b in zip(prompts, plain, steered):
    print("steering | %s\n  plain:   %r\n  steered: %r" % (p, a.text, b.text))

# %% 2. Capture: the last prompt token's residual stream after every layer, one request per
# prompt in one batch; the saves are torch tensors.
every_layer = llm.compile("trace { cache(layers[*].output) }")
[cached] = llm.generate(prompts[:1], every_layer, max_tokens=1, use_tqdm=False)
residual = torch.stack([cached.saves["model.layers.%d.output" % i][-1] for i in range(30)])
print("capture | residual stream [layers, hidden] =", list(residual.shape),
      "| norm by layer:", [round(float(n)) for n in residual.norm(dim=-1)[::6]])

# %% 3. Logit lens: the final norm and the unembedding applied to every layer's last-token
# state, inside the program (a loop over layers saves `top.<layer>`; only the top token of
# each layer leaves the engine, never a [T, vocab] tensor).
lens = llm.compile("""
trace {
    for i in 0..30 { top = lm_head(norm(layers[i].output[-1])).argmax().save() }
}
""")
[seen] = llm.generate(prompts[:1], lens, max_tokens=1, temperature=0, use_tqdm=False)
tops = [int(seen.saves["top.%d" % i]) for i in range(30)]
print("logit lens | %s ->" % prompts[0],
      " ".join("%d:%r" % (i, llm.tokenizer.decode([t])) for i, t in enumerate(tops) if i % 5 == 4))
print("logit lens | last layer's prediction %r, the model's next token %r"
      % (llm.tokenizer.decode([tops[-1]]), llm.tokenizer.decode(seen.token_ids)))

"""docs/FirstHour.md's experiments (examples/first-hour/*.nns) as the page runs them, on SmolLM2.

Usage: first_hour_check.py BIN_DIR MODEL SRC_ROOT WORKDIR

Each check compares one door's result with something computed another way, so it fails when a
door drifts from what the page says:
- logit lens (nns-run, model-generic `0..layers`): one int64 save per layer, top.0 ... top.N-1;
  the last layer's lens is the model's own next-token choice, so top.<N-1> equals the greedy
  token nns-run generated; `nns-tokenize decode` lists the saves in layer order (natural, not
  lexicographic) with the same text the tokenizer gives each id.
- ActAdd (nns-run, three invokes, stop() in the two sources): the sources end in their prompt
  pass with no token, the target generates the default 16 tokens, steered (they differ from the
  target prompt run plain), and the JSON record's top level is the target's; nnsc.LLM gives the
  same target text as `Result.text` and the same per-invoke finish reasons.
- knockout (nns-run): the per-step saves equal the tokens generated at those steps.
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file

BIN, MODEL, SRC, WORK = sys.argv[1:5]
EXAMPLES = os.path.join(SRC, "examples", "first-hour")
PROMPT = "The capital of France is"


def run(*args):
    proc = subprocess.run([os.path.join(BIN, args[0])] + list(args[1:]), capture_output=True,
                          text=True)
    assert proc.returncode == 0, "%s failed:\n%s" % (" ".join(args), proc.stderr)
    return proc.stdout


def nns_run(program, prompts, name, extra=()):
    out = os.path.join(WORK, name)
    args = ["nns-run", "--model", MODEL, "--trace", os.path.join(EXAMPLES, program), "--json",
            "--quiet", "--save-dir", out] + list(extra)
    for p in prompts:
        args += ["--prompt", p]
    records = [json.loads(line) for line in run(*args).splitlines() if line.startswith("{")]
    return records, out


# 1. Logit lens.
records, out = nns_run("logit-lens.nns", [PROMPT], "lens", ["--max-tokens", "1"])
saves = load_file(os.path.join(out, "0.safetensors"))
layers = len(saves)
assert sorted(saves) == sorted("top.%d" % i for i in range(layers)), sorted(saves)
assert all(t.dtype == torch.int64 for t in saves.values()), {k: t.dtype for k, t in saves.items()}
generated = records[0]["ids"]
assert int(saves["top.%d" % (layers - 1)]) == generated[0], (saves, generated)
decoded = [json.loads(line) for line in run("nns-tokenize", "decode", "--model", MODEL, "--save",
                                            os.path.join(out, "0.safetensors")).splitlines()]
assert [d["key"] for d in decoded] == ["top.%d" % i for i in range(layers)], decoded
assert all(d["ids"] == [int(saves[d["key"]])] for d in decoded), decoded
print("lens: %d layers, top.%d = the generated token %d, nns-tokenize decode in layer order"
      % (layers, layers - 1, generated[0]))

# 2. ActAdd.
sources, target = ["Love", "Hate"], "I think dogs are"
records, _ = nns_run("actadd.nns", sources + [target], "actadd")
[record] = records
names = [inv["name"] for inv in record["invokes"]]
assert names == ["love", "hate", "target"], names
love, hate, steered = record["invokes"]
for source in (love, hate):
    assert source["ids"] == [] and source["finish_reason"] == "stop", source
assert len(steered["ids"]) == 16 and record["ids"] == steered["ids"], record
plain = json.loads(run("nns-run", "--model", MODEL, "--json", "--quiet", "--prompt",
                       target).splitlines()[0])
assert plain["ids"] != steered["ids"], "ActAdd left the target's tokens unchanged"

import nnsc  # noqa: E402  (after the command-line checks: loading the model takes a while)

llm = nnsc.LLM(threads=2)
program = llm.compile(open(os.path.join(EXAMPLES, "actadd.nns")).read())
[result] = llm.generate([sources + [target]], program, use_tqdm=False)
assert result.text == record["text"], (result.text, record["text"])
assert result.invokes["target"].token_ids == steered["ids"]
assert [result.invokes[n].finish_reason for n in names] == ["stop", "stop", "length"]
print("actadd: sources stop in their prompt pass, target steered (%r), nnsc.LLM equal"
      % record["text"][:40])

# 3. Attention knockout.
records, out = nns_run("knockout.nns", [PROMPT], "knockout", ["--max-tokens", "4"])
saves = load_file(os.path.join(out, "0.safetensors"))
tokens = [int(saves["top.%d" % s]) for s in range(4)]
assert tokens == records[0]["ids"], (tokens, records[0]["ids"])
print("knockout: per-step saves equal the generated tokens")

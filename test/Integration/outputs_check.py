"""nns-run's and nns-tokenize's outputs on SmolLM2, against nns-run itself run another way.

Usage: outputs_check.py NNS_RUN NNS_TOKENIZE MODEL WORKDIR

- A plain-text prompts file (.txt, one prompt per line, blank and CRLF lines included) runs the
  same requests as the same prompts given with --prompt.
- A three-invoke trace (ActAdd: love, hate, target) prints one --json record per request: each
  invoke's fields under "invokes" in invoke order, the last invoke's at the top level, and the
  same record in --save-dir's 0.json; without --json each invoke's text after its name.
- Integer saves (a logit lens' argmax ids) are int64 in the --save-dir file; `nns-tokenize
  decode` lists them in natural order (top.2 before top.10), and the last layer's id decodes
  to nns-run's first generated token.
- --capture keys: '<site>.<request>' rows and '<site>.order' as documented.
"""
import json
import os
import subprocess
import sys

from safetensors.numpy import load_file

NNS_RUN, NNS_TOKENIZE, MODEL, WORK = sys.argv[1:5]
PROMPTS = ["The capital of France is", "Once upon a time"]
ACTADD = """trace actadd {
    invoke love { a = layers[6].output[-1] }
    invoke hate { b = layers[6].output[-1] }
    invoke target { layers[6].output += 8.0 * (a - b) }
}
"""
LENS = "trace { for i in 0..30 { top = lm_head(norm(layers[i].output[-1])).argmax().save() } }"


def run(*args):
    cmd = [NNS_RUN, "--model", MODEL, "--temperature", "0", "--quiet"] + list(args)
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def write(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w", newline="") as f:
        f.write(text)
    return path


def expect(ok, what):
    if not ok:
        sys.exit("FAIL: " + what)


def text_prompts():
    path = write("prompts.txt", PROMPTS[0] + "\n\n" + PROMPTS[1] + "\r\n")
    from_file = run("--prompts", path, "--json", "--max-tokens", "3")
    from_flags = run("--prompt", PROMPTS[0], "--prompt", PROMPTS[1], "--json",
                     "--max-tokens", "3")
    expect(from_file == from_flags, "the .txt prompts ran other requests:\n%s\n%s"
           % (from_file, from_flags))
    records = [json.loads(line) for line in from_file.splitlines()]
    expect([r["prompt"] for r in records] == PROMPTS, "prompts %s" % records)
    print("text prompts: %d lines of a .txt file run as the same --prompt requests"
          % len(records))


def invokes():
    program = write("actadd.nns", ACTADD)
    prompts = ["--prompt", "Love", "--prompt", "Hate", "--prompt", PROMPTS[0]]
    out = run("--trace", program, "--json", "--max-tokens", "4", "--save-dir",
              os.path.join(WORK, "actadd"), *prompts)
    [record] = [json.loads(line) for line in out.splitlines()]
    names = [i["name"] for i in record["invokes"]]
    expect(names == ["love", "hate", "target"], "invoke names %s" % names)
    last = record["invokes"][-1]
    expect(all(record[k] == last[k] for k in ("ids", "prompt_ids", "text", "prompt",
                                              "finish_reason")),
           "the top level is not the last invoke's: %s" % record)
    expect(record["request"] == 0, "request %s" % record["request"])
    with open(os.path.join(WORK, "actadd", "0.json")) as f:
        saved = json.load(f)
    expect({k: v for k, v in saved.items() if k != "bundled"} == record,
           "--save-dir's record differs from --json's:\n%s\n%s" % (saved, record))
    plain = run("--trace", program, "--max-tokens", "4", *prompts)
    for i in record["invokes"]:
        expect("--- invoke %s\n%s\n" % (i["name"], i["text"]) in plain,
               "text output lacks invoke %s:\n%s" % (i["name"], plain))
    print("invokes: one record with love, hate, target; the top level is target's")


def decode():
    program = write("lens.nns", LENS)
    out_dir = os.path.join(WORK, "lens")
    [record] = [json.loads(line) for line in
                run("--trace", program, "--prompt", PROMPTS[0], "--max-tokens", "1", "--json",
                    "--save-dir", out_dir).splitlines()]
    saves = load_file(os.path.join(out_dir, "0.safetensors"))
    expect(all(str(v.dtype) == "int64" for v in saves.values()),
           "argmax saves are %s" % {str(v.dtype) for v in saves.values()})
    lines = subprocess.run([NNS_TOKENIZE, "decode", "--save", os.path.join(out_dir, "0.safetensors"),
                            "--model", MODEL], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    decoded = [json.loads(line) for line in lines]
    keys = [d["key"] for d in decoded]
    expect(keys == ["top.%d" % i for i in range(30)], "decode order %s" % keys)
    expect(all(d["ids"] == [int(saves[d["key"]])] for d in decoded), "decoded ids differ")
    # The last layer's lens is the model's own prediction: the first generated token.
    expect(decoded[-1]["ids"] == record["ids"][:1] and decoded[-1]["text"] == record["text"],
           "top.29 decodes to %r, nns-run generated %r" % (decoded[-1]["text"], record["text"]))
    print("decode: 30 int64 saves in natural order; top.29 is nns-run's first token %r"
          % record["text"])


def capture():
    save = os.path.join(WORK, "capture.safetensors")
    run("--prompt", PROMPTS[0], "--prompt", PROMPTS[1], "--max-tokens", "2", "--capture",
        "lm_head.input", "--capture", "model.layers.3.output", "--save", save)
    saved = load_file(save)
    expect(sorted(saved) == ["lm_head.input.0", "lm_head.input.1", "lm_head.input.order",
                             "model.layers.3.output.0", "model.layers.3.output.1",
                             "model.layers.3.output.order"], "capture keys %s" % sorted(saved))
    expect(int(saved["model.layers.3.output.order"]) < int(saved["lm_head.input.order"]),
           "firing order")
    print("capture: <site>.<request> rows and <site>.order in firing order")


def main():
    os.makedirs(WORK, exist_ok=True)
    text_prompts()
    invokes()
    decode()
    capture()


if __name__ == "__main__":
    main()

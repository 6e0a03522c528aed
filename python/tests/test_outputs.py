"""What a run hands back: a multi-invoke Result by invoke name with the last invoke's text (the
same shape as nns-run's --json record), saves in natural order with integer saves as int64,
and saved ids decoded by the tokenizer."""

import torch

import nnsc
from conftest import nns_run

# ActAdd: the difference of two source prompts' layer-6 states steers the target prompt.
ACTADD = """trace actadd {
    invoke love { a = layers[6].output[-1] }
    invoke hate { b = layers[6].output[-1] }
    invoke target { layers[6].output += 8.0 * (a - b) }
}
"""
PROMPTS = ["Love", "Hate", "I think that you are"]
LENS = "trace { for i in 0..12 { top = lm_head(norm(layers[i].output[-1])).argmax().save() } }"


def test_multi_invoke_result_by_invoke_name(llm, tmp_path):
    program = tmp_path / "actadd.nns"
    program.write_text(ACTADD)
    [r] = llm.generate([PROMPTS], ACTADD, max_tokens=6, temperature=0, use_tqdm=False)
    assert list(r.invokes) == ["love", "hate", "target"]
    assert [o.prompt for o in r.invokes.values()] == PROMPTS
    # The result is the steered target's run, not the first source prompt's.
    assert r.text == r.invokes["target"].text and r.token_ids == r.invokes["target"].token_ids
    assert r.finish_reason == r.invokes["target"].finish_reason
    assert r.text != r.invokes["love"].text
    assert "invokes={love=" in repr(r)

    # nns-run --json: one record per request, the same per-invoke fields and top-level text.
    args = ["--trace", str(program), "--temperature", "0", "--max-tokens", "6"]
    for p in PROMPTS:
        args += ["--prompt", p]
    [(record, _)] = nns_run(args)
    assert [i["name"] for i in record["invokes"]] == list(r.invokes)
    for i in record["invokes"]:
        o = r.invokes[i["name"]]
        assert (i["ids"], i["text"], i["prompt"], i["finish_reason"]) == \
            (o.token_ids, o.text, o.prompt, o.finish_reason)
    assert (record["ids"], record["text"], record["request"]) == (r.token_ids, r.text, 0)

    # A plain request keeps the old fields, with no invokes.
    [plain] = llm.generate(PROMPTS[2], max_tokens=2, temperature=0, use_tqdm=False)
    assert plain.invokes == {} and plain.text == plain.outputs[0].text


def test_saves_in_natural_order_and_integer_ids(llm, tmp_path):
    [r] = llm.generate(PROMPTS[2], LENS, max_tokens=1, use_tqdm=False)
    assert list(r.saves) == ["top.%d" % i for i in range(12)]
    assert all(t.dtype == torch.int64 for t in r.saves.values())
    # The same as nns-run writes them.
    [(_, saves)] = nns_run(["--trace", _write(tmp_path, LENS), "--prompt", PROMPTS[2],
                            "--max-tokens", "1"], tmp_path / "out")
    assert all(saves[k].dtype == torch.int64 and torch.equal(saves[k], r.saves[k])
               for k in r.saves)
    # Decoding a saved id: a 0-d tensor, an int or a list decode alike.
    top = r.saves["top.11"]
    assert llm.tokenizer.decode(top) == llm.tokenizer.decode(int(top)) == \
        llm.tokenizer.decode([int(top)])

    [layers] = llm.generate(PROMPTS[2], "trace { cache(layers[*].output) }", max_tokens=1,
                            use_tqdm=False)
    assert list(layers.saves) == ["model.layers.%d.output" % i for i in range(30)]


def test_saves_order_numbers_by_value():
    saves = nnsc.Saves({"x.10": 1, "x.2": 2, "layers.10.out": 3, "layers.2.out": 4, "x": 5,
                        "a.1.b.10": 6, "a.1.b.9": 7})
    assert list(saves) == ["a.1.b.9", "a.1.b.10", "layers.2.out", "layers.10.out", "x",
                           "x.2", "x.10"]


def _write(tmp_path, source):
    path = tmp_path / "program.nns"
    path.write_text(source)
    return str(path)

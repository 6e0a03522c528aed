"""Gemma 3 270M (the second bundled model) through every door: nnsc.LLM in this process,
nnsc.Client against nns-serve, and the NNsight-code front end give the tokens and saves of
nns-run on the same file (which test/Runtime/Models/gemma3-logits.test and
test/Integration/parity/gemma3.test check against transformers and nnsight 0.8.1)."""

import json
import os
import urllib.request

import pytest
import torch

import nnsc
from conftest import ROOT, THREADS, nns_run, served, tool

GEMMA = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
FIRST_HOUR = os.path.join(ROOT, "examples", "first-hour")
PROMPTS = ["The capital of France is", "Once upon a time, in a small village,"]
# Steering scaled to Gemma's residual stream (its norms are in the thousands after layer 6).
STEER = "param steer: f32[hidden]\nparam alpha: f32 = 1.0\n" \
        "trace { for step in steps { layers[6].output[-1] += alpha * steer } }\n"


@pytest.fixture(scope="module")
def gemma():
    if not os.path.exists(GEMMA):
        pytest.fail("%s is missing: scripts/setup assembles it" % GEMMA)
    return nnsc.LLM(GEMMA, threads=THREADS)


def steer_vector():
    v = torch.randn(640, generator=torch.Generator().manual_seed(3))
    return (2000.0 * v / v.norm()).tolist()


def test_plain_tokens_equal_nns_run(gemma):
    records = nns_run(["--prompt", PROMPTS[0], "--prompt", PROMPTS[1], "--max-tokens", "12"],
                      model=GEMMA)
    results = gemma.generate(PROMPTS, max_tokens=12, use_tqdm=False)
    assert [r.token_ids for r in results] == [rec["ids"] for rec, _ in records]
    assert [r.prompt_token_ids for r in results] == [rec["prompt_ids"] for rec, _ in records]


def test_logit_lens_saves_equal_nns_run(gemma, tmp_path):
    lens = os.path.join(FIRST_HOUR, "logit-lens.nns")
    [(record, saves)] = nns_run(["--trace", lens, "--prompt", PROMPTS[0], "--max-tokens", "4"],
                                save_dir=tmp_path, model=GEMMA)
    [result] = gemma.generate(PROMPTS[0], gemma.compile(lens), max_tokens=4, use_tqdm=False)
    assert sorted(result.saves) == sorted(saves) and len(saves) == 18
    for name, value in saves.items():
        assert torch.equal(result.saves[name], value), name
    assert result.token_ids == record["ids"]


def test_server_equals_llm(gemma):
    params = {"steer": steer_vector(), "alpha": 1.0}
    want = gemma.generate(PROMPTS, STEER, params, max_tokens=8, use_tqdm=False)
    plain = gemma.generate(PROMPTS, max_tokens=8, use_tqdm=False)
    assert [w.token_ids for w in want] != [p.token_ids for p in plain], "steering did nothing"
    with served(model=GEMMA) as url:
        client = nnsc.Client(url)
        got = client.generate(PROMPTS, STEER, params, max_tokens=8, use_tqdm=False)
        assert [g.token_ids for g in got] == [w.token_ids for w in want]
        with urllib.request.urlopen(url + "/v1/nns/sites") as response:
            sites = json.load(response)
    assert (sites["architecture"], sites["layers"], sites["hidden"]) == \
        ("Gemma3ForCausalLM", 18, 640)
    assert [s["path"] for s in sites["sites"]] == [s.path for s in gemma.sites()]


def test_nnsight_code_equals_nns(gemma):
    model = nnsc.LanguageModel(gemma)
    with model.trace(PROMPTS[0]):
        norms = [model.model.layers[i].output[0, -1].norm().save()
                 for i in range(len(model.model.layers))]
    program = "trace { for i in 0..layers { n = layers[i].output[-1].norm().save() } }"
    [result] = gemma.generate(PROMPTS[0], program, max_tokens=0, use_tqdm=False)
    assert len(norms) == 18
    for i, value in enumerate(norms):
        assert torch.allclose(value, result.saves["n.%d" % i], rtol=1e-5, atol=1e-4), i

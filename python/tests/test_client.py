"""nnsc.Client against a live nns-serve on a free loopback port: the same generate API gives the
same tokens and saves as nnsc.LLM in this process (itself checked against nns-run in
test_parity.py), and bad requests raise the same kinds of exceptions."""

import os
import re

import pytest
import torch

import nnsc
from conftest import CANONICAL, served

PROMPTS = ["The capital of France is", "Once upon a time, in a small village,"]
STEER = "param steer: f32[hidden]\nparam alpha: f32 = 4.0\n" \
        "trace { for step in steps { layers[12].output += alpha * steer } }\n"


@pytest.fixture(scope="module")
def server():
    with served("--api-key", "secret") as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return nnsc.Client(server, api_key="secret")


def test_plain_generation_equals_llm(client, llm):
    a = client.generate(PROMPTS, max_tokens=8, temperature=0, use_tqdm=False)
    b = llm.generate(PROMPTS, max_tokens=8, temperature=0, use_tqdm=False)
    assert [r.token_ids for r in a] == [r.token_ids for r in b]
    assert [r.text for r in a] == [r.text for r in b]
    assert [r.prompt_token_ids for r in a] == [r.prompt_token_ids for r in b]
    assert [r.finish_reason for r in a] == [r.finish_reason for r in b]


def test_steering_with_tensor_params_equals_llm(client, llm):
    steer = torch.randn(576, generator=torch.Generator().manual_seed(0))
    params = [{"steer": steer, "alpha": 2.0}, {"steer": steer.numpy(), "alpha": 1}]
    a = client.generate(PROMPTS, STEER, params, max_tokens=6, temperature=0, use_tqdm=False)
    b = llm.generate(PROMPTS, STEER, params, max_tokens=6, temperature=0, use_tqdm=False)
    assert [r.token_ids for r in a] == [r.token_ids for r in b]


@pytest.mark.parametrize("file", ["01-capture.nns", "04-logit-lens.nns", "10-cache-layers.nns"])
def test_saves_equal_llm(client, llm, file):
    path = os.path.join(CANONICAL, file)
    a = client.generate(PROMPTS, path, max_tokens=2, temperature=0, use_tqdm=False)
    b = llm.generate(PROMPTS, path, max_tokens=2, temperature=0, use_tqdm=False)
    for x, y in zip(a, b):
        assert x.token_ids == y.token_ids
        assert sorted(x.saves) == sorted(y.saves) and x.saves
        # The server batches the client's concurrent requests as they arrive, the LLM all at
        # once: the products' row counts, and so their summation order, can differ.
        for name in y.saves:
            torch.testing.assert_close(x.saves[name], y.saves[name], rtol=1e-4, atol=1e-4,
                                       msg=name)


def test_patching_takes_a_prompt_per_invoke(client, llm):
    path = os.path.join(CANONICAL, "11-patching.nns")
    request = ["The capital of France is the city of", "The capital of Italy is the city of"]
    params = {"tok_a": 7042, "tok_b": 8010}
    [a] = client.generate([request], path, params, max_tokens=3, temperature=0, use_tqdm=False)
    [b] = llm.generate([request], path, params, max_tokens=3, temperature=0, use_tqdm=False)
    assert [o.token_ids for o in a.outputs] == [o.token_ids for o in b.outputs]
    assert torch.equal(a.saves["diff"], b.saves["diff"])
    # The server names each choice's invoke; the text is the last (corrupt) invoke's.
    assert list(a.invokes) == list(b.invokes) == ["clean", "corrupt"]
    assert a.text == b.text == b.invokes["corrupt"].text


def test_bad_requests_raise_and_the_server_keeps_serving(client):
    with pytest.raises(nnsc.CompileError, match=r"program\.nns:1:\d+: error"):
        client.generate(PROMPTS[0], "trace { h = layers[99].output.save() }", use_tqdm=False)
    with pytest.raises(ValueError, match=r"'steer'.*576"):
        client.generate(PROMPTS[0], STEER, {"steer": torch.zeros(5)}, use_tqdm=False)
    with pytest.raises(ValueError, match=r"context"):
        client.generate([[1] * 5000], max_tokens=1, use_tqdm=False)
    [r] = client.generate(PROMPTS[0], "trace { h = layers[1].output[6].save() }",
                          max_tokens=2, use_tqdm=False)
    assert r.finish_reason == "error" and "failed while running" in r.error
    with pytest.raises(nnsc.ServerError, match=r"401"):
        nnsc.Client(client.base_url, api_key="wrong")
    assert client.generate(PROMPTS[0], max_tokens=2, use_tqdm=False)[0].finish_reason == "length"


def test_tokenizer_through_the_server(client, llm):
    text = "The capital of France is Paris."
    ids = client.tokenizer.encode(text)
    assert ids == llm.tokenizer.encode(text)
    assert client.tokenizer.encode(text, add_special_tokens=False) == \
        llm.tokenizer.encode(text, add_special_tokens=False)
    assert client.tokenizer.decode(ids) == llm.tokenizer.decode(ids) == text
    assert client.tokenizer.decode(torch.tensor(ids)) == text
    assert client.tokenizer.decode(ids[0], skip_special_tokens=False) == \
        llm.tokenizer.decode([ids[0]], skip_special_tokens=False)
    with pytest.raises(ValueError, match=r"token id 99999999 is outside the vocabulary"):
        client.tokenizer.decode([1, 99999999])
    with pytest.raises(TypeError, match=r"integers"):
        client.tokenizer.decode(torch.zeros(2))


def test_tokenize_endpoints_refuse_bad_bodies(client):
    cases = [("/v1/nns/tokenize", {"text": 5}, "'text' must be a string"),
             ("/v1/nns/tokenize", {}, "'text' is required"),
             ("/v1/nns/tokenize", {"text": "x", "prompt": "y"}, "unknown field 'prompt'"),
             ("/v1/nns/tokenize", {"text": "x", "add_special_tokens": "yes"},
              "'add_special_tokens' must be a boolean"),
             ("/v1/nns/detokenize", {"ids": [1, -2]}, "'ids' must be a list of token ids"),
             ("/v1/nns/detokenize", {"ids": "1 2"}, "'ids' must be a list of token ids"),
             ("/v1/nns/detokenize", [1, 2], "must be a JSON object")]
    for path, body, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            client._request("POST", path, body)
    assert client.tokenizer.decode([]) == ""


def test_sampling_defaults_agree_across_doors(client, llm):
    """No sampling argument anywhere: nns-run, nnsc.LLM and nns-serve (through Client) take the
    one C++ default (SamplingParams: greedy, 16 tokens), so they print the same tokens, and
    those are the greedy ones."""
    from conftest import nns_run
    defaults = nnsc.llm.SAMPLING_DEFAULTS
    assert defaults["temperature"] == 0.0
    cli = [record["ids"] for record, _ in
           nns_run([arg for p in PROMPTS for arg in ("--prompt", p)])]
    a = [r.token_ids for r in client.generate(PROMPTS, use_tqdm=False)]
    b = [r.token_ids for r in llm.generate(PROMPTS, use_tqdm=False)]
    greedy = [r.token_ids for r in llm.generate(PROMPTS, temperature=0, seed=7, use_tqdm=False)]
    assert a == b == cli == greedy
    assert all(len(ids) <= defaults["max_tokens"] for ids in a)
    assert any(len(ids) == defaults["max_tokens"] for ids in a)

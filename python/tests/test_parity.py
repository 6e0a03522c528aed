"""The canonical programs through nnsc.LLM give the same tokens and saves as through nns-run
(compiled there by the nnsc tool, here in-process), on the same prompts in one batch."""

import os

import pytest
import torch
from safetensors.torch import save_file

from conftest import CANONICAL, nns_run

PROMPTS = ["The capital of France is", "Once upon a time, in a small village,"]


def steer_vector():
    steer = torch.randn(576, generator=torch.Generator().manual_seed(0))
    return 8 * steer / steer.norm()


# (program file, max_tokens, params for nnsc.LLM, --param specs for nns-run given a temp dir)
CASES = {
    "01-capture": ("01-capture.nns", 3, {}, lambda d: []),
    "02-steering": ("02-steering.nns", 6, {"steer": steer_vector(), "alpha": 2.0},
                    lambda d: ["--param", "steer=@%s:steer" % d, "--param", "alpha=2.0"]),
    "04-logit-lens": ("04-logit-lens.nns", 2, {}, lambda d: []),
    "06-top-logits": ("06-top-logits.nns", 5, {}, lambda d: []),
    "10-cache-layers": ("10-cache-layers.nns", 2, {}, lambda d: []),
}


def assert_same(results, reference):
    assert len(results) == len(reference)
    for r, (record, saves) in zip(results, reference):
        assert r.error is None, r.error
        assert r.token_ids == record["ids"], "tokens differ from nns-run"
        assert r.prompt_token_ids == record["prompt_ids"]
        assert r.finish_reason == record["finish_reason"]
        assert sorted(r.saves) == sorted(saves), "save names differ from nns-run"
        for name, value in saves.items():
            got = r.saves[name]
            assert got.dtype == value.dtype and got.shape == value.shape, name
            assert torch.equal(got, value), "save '%s' differs from nns-run" % name


@pytest.mark.parametrize("case", sorted(CASES))
def test_canonical_program_equals_nns_run(llm, tmp_path, case):
    file, max_tokens, params, run_params = CASES[case]
    path = os.path.join(CANONICAL, file)
    steer_file = str(tmp_path / "steer.safetensors")
    save_file({"steer": steer_vector()}, steer_file)
    args = ["--trace", path, "--temperature", "0", "--max-tokens", str(max_tokens)]
    for p in PROMPTS:
        args += ["--prompt", p]
    reference = nns_run(args + run_params(steer_file), tmp_path / "saves")
    results = llm.generate(PROMPTS, llm.compile(path), params, max_tokens=max_tokens,
                           temperature=0, use_tqdm=False)
    assert_same(results, reference)
    if case == "02-steering":  # the steering must have done something
        plain = llm.generate(PROMPTS, max_tokens=max_tokens, temperature=0, use_tqdm=False)
        assert [r.token_ids for r in plain] != [r.token_ids for r in results]


def test_patching_takes_a_prompt_per_invoke(llm, tmp_path):
    """11-patching: two invokes, so one request is a list of two prompts; its saves and each
    invoke's tokens equal nns-run's (which takes the prompts two at a time)."""
    path = os.path.join(CANONICAL, "11-patching.nns")
    clean, corrupt = ("The capital of France is the city of",
                      "The capital of Italy is the city of")
    params = {"tok_a": 7042, "tok_b": 8010}
    args = ["--trace", path, "--temperature", "0", "--max-tokens", "3", "--prompt", clean,
            "--prompt", corrupt, "--param", "tok_a=7042", "--param", "tok_b=8010"]
    [(record, saves)] = nns_run(args, tmp_path / "saves")
    [r] = llm.generate([[clean, corrupt]], path, params, max_tokens=3, temperature=0,
                       use_tqdm=False)
    assert [o.invoke for o in r.outputs] == ["clean", "corrupt"]
    assert [o.token_ids for o in r.outputs] == [i["ids"] for i in record["invokes"]]
    assert sorted(r.saves) == sorted(saves) == ["diff"]
    assert torch.equal(r.saves["diff"], saves["diff"])


def test_plain_generation_equals_nns_run(llm):
    reference = nns_run(["--temperature", "0", "--max-tokens", "12"] +
                        [a for p in PROMPTS for a in ("--prompt", p)])
    results = llm.generate(PROMPTS, max_tokens=12, temperature=0, use_tqdm=False)
    assert [r.token_ids for r in results] == [rec["ids"] for rec, _ in reference]
    assert [r.text for r in results] == [rec["text"] for rec, _ in reference]
    # Token ids as prompts give the same run as the text they encode.
    again = llm.generate([r.prompt_token_ids for r in results], max_tokens=12, temperature=0,
                         use_tqdm=False)
    assert [r.token_ids for r in again] == [r.token_ids for r in results]

"""Batch-invariant mode (docs/Engine.md, "Batch-invariant mode"): every request's saves, logits
and tokens are bitwise those of the same request run alone, for random programs over random
batches (prompts of different lengths, some sharing a prefix), with chunked prefill, with
preemption forced by a small KV cache, and with prefix-cache hits (the requests run alone after
the batch find its blocks cached), in fp32 and bf16. Two program sources: the differential
generator's random programs (every construct of the compiled language, params, several
invokes, stop() and finish()) on a random tiny Qwen3 (dense weights), and templates of the
research statements on the bundled SmolLM2 (its GGUF blocks: the quantized kernels)."""

import json
import os
import random
import sys
import urllib.error
import urllib.request

import nnsc
import pytest
import torch

from conftest import ROOT, THREADS, served

# The differential generator of the compiler's tests (test/Conversion/random-differential.test):
# random valid programs over the whole compiled language for the tiny Qwen3 config.
sys.path.insert(0, os.path.join(ROOT, "test", "Conversion", "Inputs"))
import diff_case  # noqa: E402
import random_cases  # noqa: E402
import random_programs  # noqa: E402
import random_values  # noqa: E402

WORDS = ("the of and a to in is was that for on with as by at from his her which or be are this "
         "had not but have they were it one all their there been has when who will more no if "
         "out so said what up its about into than them can only other new some could time these "
         "two may then do first any my now such like our over man me even most made after also "
         "did many before must through back years where much your way well down should because "
         "each just those people").split()

# Statements a random program draws from, over SmolLM2's sites (30 layers, 9 heads of 64,
# hidden 576). {l}: a layer, {h}: a head, {c}: a coefficient, {n}: a fresh name. Every
# program also saves each step's logits, so the logits are compared too.
STATEMENTS = [
    "{n} = layers[{l}].output[-1].save()",
    "{n} = layers[{l}].mlp.output.norm(dim=-1).save()",
    "{n} = layers[{l}].self_attn.q_proj.output[-1].save()",
    "{n} = layers[{l}].self_attn.pattern[{h}].save()",
    "{n} = lm_head(norm(layers[{l}].output[-1])).argmax().save()",
    "layers[{l}].output += {c} * layers[{l}].output.mean(0)",
    "layers[{l}].mlp.output *= {c}",
    "layers[{l}].self_attn.pattern[{h}, :, 0] = 0",
    "layers[{l}].self_attn.o_proj.input.view(-1, 9, 64)[:, {h}] = 0",
    "{n} = layers[{l}].mlp(layers[{l}].post_attention_layernorm.output).sum().save()",
]


def random_program(rng):
    """A trace of 2-4 random statements, in site firing order, run at every step, or at every
    step after the prompt pass (a program that leaves the prompt alone: its prompt may be
    computed in chunks, which the other programs' never are)."""
    picks = sorted(((rng.randrange(30), rng.randrange(len(STATEMENTS))) for _ in
                    range(rng.randint(2, 4))))
    lines = []
    for i, (layer, s) in enumerate(dict(picks).items()):  # one statement per layer
        lines.append("        " + STATEMENTS[s].format(
            n="v%d" % i, l=layer, h=rng.randrange(9), c=round(rng.uniform(0.5, 1.5), 3)))
    lines.append("        logit = logits.save()")
    steps = rng.choice(["steps", "steps[1:]"])
    return "trace {\n    for step in %s {\n%s\n    }\n}\n" % (steps, "\n".join(lines))


def random_prompts(rng, count):
    """`count` prompts of 3 to ~150 words; a few continue an earlier one (a shared prefix of
    whole KV blocks, so the later request can hit the cache)."""
    prompts = []
    for _ in range(count):
        if prompts and rng.random() < 0.3:
            prompts.append(rng.choice(prompts) + " " + " ".join(rng.choices(WORDS, k=5)))
        else:
            prompts.append(" ".join(rng.choices(WORDS, k=rng.choice([3, 8, 40, 90, 150]))))
    return prompts


def assert_same(alone, batched, where):
    assert alone.token_ids == batched.token_ids, "%s: tokens differ" % where
    assert list(alone.saves) == list(batched.saves), "%s: saves differ in names" % where
    for name, value in alone.saves.items():
        other = batched.saves[name]
        assert value.dtype == other.dtype and value.shape == other.shape, (where, name)
        assert torch.equal(value, other), "%s: save %s differs by %g" % (
            where, name, (value.double() - other.double()).abs().max())


def check_batch(llm, rng, programs, prompts_per_batch, max_tokens):
    for p in range(programs):
        program = llm.compile(random_program(rng))
        prompts = random_prompts(rng, prompts_per_batch)
        batched = llm.generate(prompts, program, max_tokens=max_tokens, batch_invariant=True,
                               use_tqdm=False)
        for i, prompt in enumerate(prompts):
            [alone] = llm.generate([prompt], program, max_tokens=max_tokens,
                                   batch_invariant=True, use_tqdm=False)
            assert batched[i].finish_reason != "error", batched[i].error
            assert_same(alone, batched[i], "program %d request %d\n%s" % (p, i, program.source))


# Engine configurations: the default (prompts prefilled whole, as many as fit in a step);
# chunked prefill (64 tokens a step, so long prompts arrive in chunks beside other requests'
# chunks and decode steps); few KV blocks (requests preempted and recomputed).
CONFIGS = {
    "whole": dict(),
    "chunked": dict(max_num_batched_tokens=64, max_num_seqs=16),
    "preempted": dict(num_blocks=40, max_model_len=256),
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_fp32_requests_equal_alone(config):
    llm = nnsc.LLM(threads=THREADS, **CONFIGS[config])
    check_batch(llm, random.Random("fp32-" + config), programs=2, prompts_per_batch=6,
                max_tokens=4)


def test_bf16_requests_equal_alone():
    llm = nnsc.LLM(dtype="bfloat16", threads=THREADS, max_num_batched_tokens=64, max_num_seqs=16,
                   num_blocks=48, max_model_len=256)
    check_batch(llm, random.Random("bf16"), programs=1, prompts_per_batch=5, max_tokens=3)


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory):
    """A random tiny Qwen3 in safetensors: the differential tests' config and weights."""
    out = str(tmp_path_factory.mktemp("tiny-qwen3"))
    diff_case.tiny_model(os.path.join(ROOT, "test", "Inputs", "tiny-qwen3"), out)
    return out


def random_token_prompts(rng, count):
    """`count` prompts of 1 to 60 token ids of the tiny vocabulary; some continue an earlier one
    (a shared prefix of whole 16-token KV blocks, so the later request can hit the cache)."""
    prompts = []
    for _ in range(count):
        if prompts and rng.random() < 0.3:
            longer = rng.choice(prompts) + [rng.randrange(1, random_values.V) for _ in range(8)]
            prompts.append(longer[:100])
        else:
            prompts.append([rng.randrange(1, random_values.V)
                            for _ in range(rng.choice([1, 3, 17, 40, 60]))])
    return prompts


def assert_same_outcome(alone, batched, where):
    assert alone.finish_reason == batched.finish_reason, where
    if alone.finish_reason == "error":
        assert alone.error == batched.error, where
    else:
        assert_same(alone, batched, where)


# The tiny model's engines: 16-token KV blocks (prefix hits on short prompts), the same three
# shapes of batch as CONFIGS.
DIFFERENTIAL_CONFIGS = {
    "whole": dict(block_size=16),
    "chunked": dict(block_size=16, max_num_batched_tokens=32, max_num_seqs=8),
    "preempted": dict(block_size=16, num_blocks=14, max_model_len=128),
}


@pytest.mark.parametrize("dtype,config", [("float32", "whole"), ("float32", "chunked"),
                                          ("float32", "preempted"), ("bfloat16", "chunked")])
def test_differential_programs_requests_equal_alone(tiny_qwen3, dtype, config):
    """The differential generator's random programs, each over a random batch of requests with
    their own params (and prompts per invoke): each request equals itself run alone."""
    llm = nnsc.LLM(model=tiny_qwen3, dtype=dtype, threads=THREADS, **DIFFERENTIAL_CONFIGS[config])
    rng = random.Random("differential-%s-%s" % (dtype, config))
    torch.manual_seed(rng.randrange(1 << 30))
    header = "\n".join("param %s: %s" % p for p in random_values.PARAMS)
    for prog in random_programs.programs(rng.randrange(1 << 30), 5):
        program = llm.compile(header + "\n" + prog.text())
        count = rng.randint(3, 6)
        prompts = random_token_prompts(rng, count * prog.invokes)
        # A request's invokes are prefilled in one step: together at most a chunk's budget.
        requests = (prompts if prog.invokes == 1 else
                    [[p[:32 // prog.invokes] for p in prompts[i::count]] for i in range(count)])
        params = [random_cases.request_params(rng) for _ in requests]
        batched = llm.generate(requests, program, params, max_tokens=4, batch_invariant=True,
                               use_tqdm=False)
        for i, request in enumerate(requests):
            [alone] = llm.generate([request], program, [params[i]], max_tokens=4,
                                   batch_invariant=True, use_tqdm=False)
            assert_same_outcome(alone, batched[i],
                                "request %d of %s\n%s" % (i, prog.name, prog.text()))


def test_prompt_sites_see_the_whole_prompt_under_chunked_prefill(llm):
    """A program that reads the prompt's positions gets its prompt computed in one step even
    when the step budget would chunk it: its values are those of the unchunked run."""
    prompt = " ".join(random.Random("long").choices(WORDS, k=150))
    program = "trace { m = layers[3].output.mean(0).save()\n h = layers[3].output[-1].save() }"
    chunked = nnsc.LLM(threads=THREADS, max_num_batched_tokens=64, max_num_seqs=16)
    [a] = llm.generate([prompt], program, max_tokens=2, use_tqdm=False)
    [b] = chunked.generate([prompt, prompt[:40]], program, max_tokens=2, use_tqdm=False)[:1]
    assert len(a.prompt_token_ids) > 64
    assert a.token_ids == b.token_ids
    for name in ("m", "h"):
        torch.testing.assert_close(b.saves[name], a.saves[name], rtol=1e-4, atol=1e-4)


def test_server_requests_equal_llm_alone(llm):
    """nns-serve with "batch_invariant": true on some requests: each equals nnsc.LLM's run of it
    alone (the same kernels, the same bits), and a request without the field is still served;
    a field that is not a boolean is a 400 naming it."""
    program = "trace { for step in steps { h = layers[20].output[-1].save()\n l = logits.save() } }"
    prompts = random_prompts(random.Random("served"), 4)
    with served() as url:
        client = nnsc.Client(url)
        batched = client.generate(prompts, program, max_tokens=3, batch_invariant=True,
                                  use_tqdm=False)
        plain = client.generate(prompts[0], program, max_tokens=3, use_tqdm=False)
        request = urllib.request.Request(
            url + "/v1/completions", method="POST", headers={"Content-Type": "application/json"},
            data=json.dumps({"model": client.model, "prompt": "Hi",
                             "batch_invariant": "yes"}).encode())
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 400
        assert "batch_invariant" in json.loads(refused.value.read())["error"]["message"]
    for i, prompt in enumerate(prompts):
        [alone] = llm.generate([prompt], program, max_tokens=3, batch_invariant=True,
                               use_tqdm=False)
        assert_same(alone, batched[i], "served request %d" % i)
    assert plain[0].token_ids == batched[0].token_ids
    assert nnsc.llm.SAMPLING_DEFAULTS["batch_invariant"] is False

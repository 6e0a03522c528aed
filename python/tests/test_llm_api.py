"""The LLM API around generate: tokenizer, sites, programs as objects and files, params from
torch / numpy / Python numbers, a params dict per request, the progress bar, the GIL released
while the engine runs and Ctrl-C."""

import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

import nnsc
from conftest import CANONICAL, THREADS, nns_run, tool

PROMPT = "The capital of France is"
STEER = "param steer: f32[hidden]\nparam alpha: f32 = 4.0\n" \
        "trace { for step in steps { layers[12].output += alpha * steer } }\n"


def test_tokenizer_matches_nns_run(llm):
    [(record, _)] = nns_run(["--prompt", PROMPT, "--max-tokens", "1"])
    ids = llm.tokenizer.encode(PROMPT)
    assert ids == record["prompt_ids"]
    assert llm.tokenizer.decode(ids) == PROMPT
    assert llm.tokenizer.eos_token_ids


def test_sites(llm):
    sites = {s.path: s for s in llm.sites()}
    s = sites["model.layers.12.output"]
    assert (s.phase, s.shape, s.dtype, s.layer, s.writable) == \
        ("forward", ["T", 576], "float32", 12, True)
    assert sites["logits"].shape == [49152] and sites["logits"].phase == "logits"
    assert [s.path for s in llm.sites()][-1] == "result"


def test_program_save_and_load(llm, tmp_path):
    program = llm.compile(os.path.join(CANONICAL, "01-capture.nns"))
    assert llm.compile(os.path.join(CANONICAL, "01-capture.nns")) is program  # cached
    assert program.trace()["saves"] == [{"name": "h", "type": "f32[576]", "per_step": False}]
    program.save(tmp_path / "capture.nnsb")
    loaded = nnsc.Program.load(tmp_path / "capture.nnsb", llm)
    a = llm.generate(PROMPT, program, max_tokens=1, use_tqdm=False)[0].saves["h"]
    b = llm.generate(PROMPT, loaded, max_tokens=1, use_tqdm=False)[0].saves["h"]
    c = llm.generate(PROMPT, str(tmp_path / "capture.nnsb"), max_tokens=1,
                     use_tqdm=False)[0].saves["h"]
    assert torch.equal(a, b) and torch.equal(a, c)
    with pytest.raises(FileNotFoundError):
        nnsc.Program.load(tmp_path / "missing.nnsb")


def test_a_bundle_for_another_model_is_refused(llm, tmp_path):
    bogus = tmp_path / "bogus.nnsb"
    bogus.write_bytes(b"not a shared object")
    with pytest.raises(ValueError, match=r"bogus\.nnsb"):
        llm.generate(PROMPT, nnsc.Program.load(bogus), use_tqdm=False)


def test_params_from_torch_numpy_and_numbers_agree(llm):
    steer = torch.randn(576, generator=torch.Generator().manual_seed(1))
    runs = [{"steer": steer, "alpha": 2.0},
            {"steer": steer.numpy(), "alpha": np.float32(2.0)},
            {"steer": steer.double(), "alpha": torch.tensor(2)},
            {"steer": steer.tolist(), "alpha": 2}]
    out = llm.generate([PROMPT] * 4, STEER, runs, max_tokens=6, temperature=0, use_tqdm=False)
    assert all(r.token_ids == out[0].token_ids for r in out)
    other = llm.generate(PROMPT, STEER, {"steer": -steer}, max_tokens=6, temperature=0,
                         use_tqdm=False)
    assert other[0].token_ids != out[0].token_ids  # the params reached the program


def test_saves_are_torch_tensors_that_outlive_the_result(llm):
    [r] = llm.generate(PROMPT, "trace { for step in steps[0:3] { h = layers[3].output[-1].save() } }",
                       max_tokens=3, temperature=0, use_tqdm=False)
    saves = r.saves
    del r
    assert sorted(saves) == ["h.0", "h.1", "h.2"]
    assert all(isinstance(v, torch.Tensor) and v.shape == (576,) for v in saves.values())
    assert float(saves["h.2"].abs().sum()) > 0


def test_progress_bar(llm, capfd):
    llm.generate([PROMPT, PROMPT], max_tokens=2, use_tqdm=True)
    err = capfd.readouterr().err
    assert "Processed prompts" in err and "2/2" in err
    llm.generate([PROMPT], max_tokens=2, use_tqdm=False)
    assert "Processed prompts" not in capfd.readouterr().err


def test_gil_is_released_while_the_engine_runs(llm):
    """Another Python thread keeps running while generate works: with the GIL held through a
    0.1 s slice it would wake once per slice instead of every 10 ms."""
    done = threading.Event()
    def work():
        # Long enough to tell on a fast CPU too (30 tokens took 0.39 s on a Zen 4).
        llm.generate([PROMPT] * 2, max_tokens=120, ignore_eos=True, use_tqdm=False)
        done.set()
    worker = threading.Thread(target=work)
    start = time.monotonic()
    worker.start()
    ticks = 0
    while not done.is_set():
        time.sleep(0.01)
        ticks += 1
    elapsed = time.monotonic() - start
    worker.join()
    assert elapsed > 0.5, "too short to tell (%.2f s)" % elapsed
    assert ticks > 0.4 * elapsed / 0.01, "%d wakeups in %.2f s" % (ticks, elapsed)


def test_ctrl_c_cancels_and_the_llm_keeps_working(llm):
    # A background job of a non-interactive shell starts with SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler: give the test the one an interactive user has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        plain = llm.generate(PROMPT, max_tokens=3, temperature=0, use_tqdm=False)[0].token_ids
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            llm.generate([PROMPT] * 4, max_tokens=1000, ignore_eos=True, use_tqdm=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 5, "Ctrl-C took too long to land"
    assert llm._engine.finished, "requests of the cancelled call are still queued"
    assert llm.generate(PROMPT, max_tokens=3, temperature=0,
                        use_tqdm=False)[0].token_ids == plain


def test_blocks_only_weights_give_the_same_completions(llm):
    """weights="blocks" keeps the GGUF blocks only (docs/Engine.md, "Memory"): a prompt long
    enough to prefill over the quantized row limit, on tiles dequantized from the blocks,
    completes as on the packed copies."""
    prompt = " ".join(["The quick brown fox jumps over the lazy dog."] * 20)
    blocks = nnsc.LLM(threads=THREADS, weights="blocks")
    want = llm.generate(prompt, max_tokens=8, temperature=0, use_tqdm=False)[0]
    got = blocks.generate(prompt, max_tokens=8, temperature=0, use_tqdm=False)[0]
    assert got.token_ids == want.token_ids


ACTADD = ("trace steer {\n"
          "  invoke source { h = layers[6].output[-1]; stop() }\n"
          "  invoke target { layers[6].output[-1] += 4.0 * h }\n"
          "}\n")


def test_stop_in_an_invoke_ends_that_prompt_only(llm):
    """An ActAdd source only supplies its activation: it stops, its target generates, the
    same tokens as when the source is not stopped (the steering value is the same)."""
    prompts = [["Paris is a city in", PROMPT]]
    kw = dict(max_tokens=4, temperature=0, ignore_eos=True, use_tqdm=False)
    [r] = llm.generate(prompts, ACTADD, **kw)
    source, target = r.outputs
    assert (source.invoke, source.token_ids, source.finish_reason) == ("source", [], "stop")
    assert (target.invoke, len(target.token_ids), target.finish_reason) == ("target", 4, "length")
    assert r.finish_reason == "length"
    [whole] = llm.generate(prompts, ACTADD.replace("; stop()", ""), **kw)
    assert len(whole.outputs[0].token_ids) == 4
    assert whole.outputs[1].token_ids == target.token_ids


def test_compile_warns_when_stop_ends_the_whole_request(llm):
    source = ("trace both {\n"
              "  invoke a { x = layers[3].output.save() }\n"
              "  invoke b { y = layers[4].output.save() }\n"
              "  stop()\n"
              "}\n")
    with pytest.warns(UserWarning, match="stops every invoke of trace 'both': the whole "
                                         "request ends here"):
        llm.compile(source)


def test_max_tokens_zero_runs_the_prompt_pass_alone(llm):
    probe = "trace { h = layers[8].output[-1].save() }"
    [r] = llm.generate(PROMPT, probe, max_tokens=0, use_tqdm=False)
    [one] = llm.generate(PROMPT, probe, max_tokens=1, temperature=0, use_tqdm=False)
    assert (r.token_ids, r.finish_reason) == ([], "length")
    assert torch.equal(r.saves["h"], one.saves["h"])

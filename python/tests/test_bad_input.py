"""Bad input gets a clear Python exception naming what is wrong, and the same LLM keeps working
afterwards (checked after every case against a plain run computed first)."""

import numpy as np
import pytest
import torch

import nnsc

PROMPT = "The capital of France is"
STEER = "param steer: f32[hidden]\nparam alpha: f32 = 4.0\n" \
        "trace { for step in steps { layers[12].output += alpha * steer } }\n"
PATCH = "param tok: i64\ntrace { t = logits[tok].save() }\n"


@pytest.fixture(scope="module")
def plain(llm):
    return llm.generate(PROMPT, max_tokens=4, temperature=0, use_tqdm=False)[0].token_ids


@pytest.fixture
def still_works(llm, plain):
    yield
    after = llm.generate(PROMPT, max_tokens=4, temperature=0, use_tqdm=False)
    assert after[0].token_ids == plain, "the LLM changed after bad input"


def test_compile_error_has_location_and_caret(llm, still_works):
    with pytest.raises(nnsc.CompileError) as e:
        llm.compile("trace { h = layers[99].output.save() }")
    text = str(e.value)
    assert text.startswith("program.nns:1:"), text
    assert "error:" in text and "99" in text
    assert "trace { h = layers[99].output.save() }" in text and "^" in text
    assert e.value.diagnostics.startswith("program.nns:1:")


def test_compile_error_in_a_file_names_the_file(llm, tmp_path, still_works):
    path = tmp_path / "bad.nns"
    path.write_text("trace {\n  h = layers[3].outptu.save()\n}\n")
    with pytest.raises(nnsc.CompileError, match=r"bad\.nns:2:\d+: error: .*outptu"):
        llm.generate(PROMPT, str(path), use_tqdm=False)


def test_syntax_error(llm, still_works):
    with pytest.raises(nnsc.CompileError, match=r"program\.nns:1:\d+: error"):
        llm.compile("trace { h = = }")


@pytest.mark.parametrize("value", [torch.zeros(575), np.zeros((2, 576), np.float32),
                                   [1.0, 2.0], 3.0])
def test_wrong_param_shape_is_a_value_error(llm, value, still_works):
    with pytest.raises(ValueError, match=r"request 0: .*'steer'.*576"):
        llm.generate(PROMPT, STEER, {"steer": value}, max_tokens=2, use_tqdm=False)


def test_wrong_param_dtype(llm, still_works):
    with pytest.raises(ValueError, match=r"'tok'.*integral"):
        llm.generate(PROMPT, PATCH, {"tok": 1.5}, max_tokens=1, use_tqdm=False)
    with pytest.raises(TypeError, match=r"param 'tok'"):
        llm.generate(PROMPT, PATCH, {"tok": "seven"}, max_tokens=1, use_tqdm=False)
    with pytest.raises(TypeError, match=r"param 'steer'"):
        llm.generate(PROMPT, STEER, {"steer": np.array(["a"] * 576)}, max_tokens=1,
                     use_tqdm=False)


def test_missing_and_unknown_params(llm, still_works):
    with pytest.raises(ValueError, match=r"'steer'.*no default.*params="):
        llm.generate(PROMPT, STEER, max_tokens=1, use_tqdm=False)
    with pytest.raises(ValueError, match=r"'beta'"):
        llm.generate(PROMPT, STEER, {"steer": torch.zeros(576), "beta": 1.0}, max_tokens=1,
                     use_tqdm=False)
    with pytest.raises(ValueError, match=r"no program"):
        llm.generate(PROMPT, params={"alpha": 1.0}, use_tqdm=False)
    with pytest.raises(ValueError, match=r"2 dicts but there are 1 requests"):
        llm.generate(PROMPT, STEER, [{}, {}], use_tqdm=False)


def test_a_bad_request_in_a_batch_leaves_nothing_queued(llm, plain, still_works):
    """Request 1 of 3 is bad: nothing runs, and request 0, already queued, is taken back."""
    params = [{"steer": torch.zeros(576)}, {"steer": torch.zeros(3)}, {"steer": torch.zeros(576)}]
    with pytest.raises(ValueError, match=r"^request 1: "):
        llm.generate([PROMPT] * 3, STEER, params, max_tokens=2, use_tqdm=False)


def test_unknown_save_name_lists_the_saves(llm, still_works):
    [r] = llm.generate(PROMPT, "trace { h = layers[8].output[-1].save() }", max_tokens=1,
                       use_tqdm=False)
    assert list(r.saves) == ["h"]
    with pytest.raises(KeyError, match=r"no save 'g'.*saved: h"):
        r.saves["g"]


def test_overlong_prompt(llm, still_works):
    too_long = [1] * (llm.max_model_len + 1)
    with pytest.raises(ValueError, match=r"request 0: .*(longer|context|max_model_len)"):
        llm.generate([too_long], max_tokens=1, use_tqdm=False)


def test_token_id_outside_the_vocabulary(llm, still_works):
    with pytest.raises(ValueError, match=r"token id 49152 is outside the vocabulary"):
        llm.generate([[1, 2, 49152]], max_tokens=1, use_tqdm=False)


def test_bad_prompt_types(llm, still_works):
    with pytest.raises(TypeError, match=r"prompt 0"):
        llm.generate([3.5], use_tqdm=False)
    with pytest.raises(ValueError, match=r"no prompts"):
        llm.generate([], use_tqdm=False)
    with pytest.raises(ValueError, match=r"2 invokes.*list of 2 prompts"):
        llm.generate(["clean", "corrupt"], "trace {\n invoke a { h = layers[1].output[0] }\n"
                     " invoke b { layers[1].output[0] = h }\n}", use_tqdm=False)


def test_trace_choice_and_invoke_count_are_the_runtimes(llm, still_works):
    two = llm.compile("trace lens { h = layers[1].output.save() }\n"
                      "trace patch {\n invoke a { h = layers[1].output[0] }\n"
                      " invoke b { layers[1].output[0] = h }\n}\n")
    with pytest.raises(ValueError, match=r"several traces \('lens', 'patch'\); "
                                         r"choose one with trace=NAME"):
        llm.generate(PROMPT, two, use_tqdm=False)
    with pytest.raises(ValueError, match=r"no trace 'lense' \(its traces: 'lens', 'patch'\)"):
        two.trace("lense")
    with pytest.raises(ValueError, match=r"request 0: trace 'patch' has 2 invokes \('a', 'b'\) "
                                         r"and takes one prompt per invoke, in invoke order; "
                                         r"got 3"):
        llm.generate([["a", "b", "c"]], two, trace="patch", use_tqdm=False)
    assert two.trace("lens")["saves"][0]["name"] == "h"


def test_bad_sampling_params(llm, still_works):
    with pytest.raises(ValueError, match=r"top_p"):
        llm.generate(PROMPT, top_p=1.5, use_tqdm=False)


def test_bad_engine_options():
    with pytest.raises(TypeError, match=r"unknown engine option.*max_num_seq\b"):
        nnsc.LLM(max_num_seq=4)
    with pytest.raises(ValueError, match=r"dtype"):
        nnsc.LLM(dtype="int8")
    with pytest.raises(ValueError, match=r"nope\.gguf"):
        nnsc.LLM("/nonexistent/nope.gguf")
    with pytest.raises(ValueError, match=r"weights must be packed or blocks, got 'fast'"):
        nnsc.LLM(weights="fast")


def test_run_time_error_lands_on_its_result(llm, plain, still_works):
    """Row 6 of a 5-token prompt fails while running: that request's Result carries the
    engine's message; the request batched with it, whose prompt is long enough, is untouched."""
    program = "trace { h = layers[1].output[6].save() }"
    longer = PROMPT + " a city that everyone knows"
    short, long_ = llm.generate([PROMPT, longer], program, max_tokens=4, temperature=0,
                                use_tqdm=False)
    assert short.finish_reason == "error", short.error
    assert "index 6 is out of range for dimension 0 of size" in short.error, short.error
    assert short.saves == {}
    assert long_.error is None and list(long_.saves) == ["h"]
    assert long_.finish_reason == "length" and len(long_.token_ids) == 4

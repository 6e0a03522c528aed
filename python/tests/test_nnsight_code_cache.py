"""NNsight 0.8.1's `tracer.cache()` run by nnsight on transformers and by nnsc.LanguageModel:
the same modules cached, in the same order, with values within the parity tolerance
(docs/Parity.md), through the same CacheView API. What nnsc cannot cache is in
test_nnsight_code_errors.py."""

import pytest
import torch

from conftest import ALICE, FRANCE, ITALY, assert_close, assert_saves_close, unit

# Modules nnsight caches whose values nns has no site for: the rotary embedding, the decoder
# stack's output object and the wrapper's.
NO_SITE = {"model.model.rotary_emb", "model.model", "model"}


def cache_modules(model):
    """Chosen modules, by envoy and by path, with their inputs, over a batch; the write before
    them is in what they cache."""
    with model.trace([FRANCE, ITALY]) as tracer:
        cache = tracer.cache(modules=[model.model.layers[3], "model.model.layers.4.mlp",
                                      model.model.layers[5].self_attn, model.lm_head],
                             include_inputs=True)
        model.model.layers[3].output[:, -1] *= 2.0
    layers = cache.model.model.layers
    return {"layer": cache["model.model.layers.3"].output, "layer_input": layers[3].input,
            "mlp": cache["model.model.layers.4.mlp"].output,
            "mlp_input": cache["model.model.layers.4.mlp"].inputs[0][0],
            "attention": layers[5].self_attn.output[0],
            "attention_input": layers[5].self_attn.inputs[1]["hidden_states"],
            "logits": cache["model.lm_head"].output, "lm_head_input": cache["model.lm_head"].input}


def cache_generation(model):
    """model.generate: one entry per step, steering at every step included."""
    steer = unit(11, 40.0)
    with model.generate(ALICE, max_new_tokens=3, do_sample=False) as tracer:
        cache = tracer.cache(modules=[model.model.layers[8], model.lm_head])
        for step in tracer.iter[0:3]:
            model.model.layers[6].output += steer
        result = tracer.result.save()
    return {"layer": cache.model.model.layers[8].output, "logits": cache["model.lm_head"].output,
            "result": result}


@pytest.mark.parametrize("program", [cache_modules, cache_generation],
                         ids=lambda p: p.__name__)
def test_same_cache(program, nnsight_model, nnsc_model):
    expected = program(nnsight_model)
    assert_saves_close(program(nnsc_model), expected)


def every_module(model):
    with model.trace(FRANCE) as tracer:
        cache = tracer.cache()
    return cache


def test_every_module(nnsight_model, nnsc_model):
    """tracer.cache() keeps every module in nnsight's order, but those nns has no site for;
    a tuple output (self_attn's) is the same tuple."""
    expected, got = every_module(nnsight_model), every_module(nnsc_model)
    assert got.keys() == [key for key in expected.keys() if key not in NO_SITE]
    for key in got.keys():
        ref, value = expected[key].output, got[key].output
        if isinstance(ref, tuple):
            assert isinstance(value, tuple) and value[1] is None and ref[1] is None, key
            ref, value = ref[0], value[0]
        assert_close(value, ref, key)


def test_cache_view(nnsc_model):
    """The CacheView API: paths and navigation name the same entries; keys(), `in` and len()
    as nnsight's; dtype converts."""
    layers = nnsc_model.model.layers
    with nnsc_model.generate(FRANCE, max_new_tokens=2) as tracer:
        cache = tracer.cache(modules=[layers[2], layers[2].mlp], dtype=torch.float16)
    layer = cache.model.model.layers[2]
    assert cache.keys() == ["model.model.layers.2.mlp", "model.model.layers.2"]
    assert layer.keys() == ["model.model.layers.2.mlp", "model.model.layers.2"]
    assert "model.model.layers.2" in cache and "model.model.layers.3" not in cache
    assert len(layer) == 2 and len(layer.output) == 2
    assert [tuple(v.shape) for v in layer.output] == [(1, 8, 576), (1, 1, 576)]
    assert layer.output[0].dtype == torch.float16
    assert torch.equal(cache["model.model.layers.2"].output[1], layer.output[1])
    assert torch.equal(cache["model.model.layers.2.mlp"].output[0], layer.mlp.output[0])
    assert layer.input == [None, None] and layer.inputs == [None, None]
    with pytest.raises(KeyError):
        cache.model.model.layers[3].output
    assert repr(cache).startswith("CacheView(root, cached=['model.model.layers.2.mlp'")

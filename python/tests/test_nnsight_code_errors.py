"""The NNsight constructs nnsc cannot compile, each rejected with a TraceError at the user's
line (before anything runs, but for reading from a cache what nns could not cache); the model
keeps working after each."""

import inspect
import sys

import pytest
import torch
from nnsc import TraceError

from conftest import ALICE, FRANCE, ITALY


def line_after():
    """The line number after the caller's line: where the rejected construct is."""
    return sys._getframe(1).f_lineno + 1


def python_if(model):
    with model.trace(FRANCE):
        h = model.model.layers[3].output[0, -1]
        line = line_after()
        if h.sum() > 0:
            h.save()
    return line


def item(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].output[0, -1, 0].item()
    return line


def tolist(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].output[0, -1].tolist()
    return line


def unsupported_torch_function(model):
    with model.trace(FRANCE):
        line = line_after()
        torch.cumsum(model.model.layers[3].output[0], 0).save()
    return line


def unknown_method(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].output[0].cumprod(0).save()
    return line


def unknown_module(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].mlpp.output.save()
    return line


def layer_out_of_range(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[30].output.save()
    return line


def out_of_order(model):
    with model.trace(FRANCE):
        model.model.layers[8].output.save()
        line = line_after()
        model.model.layers[3].output.save()
    return line


def cube(model):
    with model.trace(FRANCE):
        line = line_after()
        (model.model.layers[3].output ** 3).save()
    return line


def list_index(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].output[0, [1, 2]].save()
    return line


def batch_out_of_range(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].output[1].save()
    return line


def ragged_position(model):
    with model.trace([FRANCE, ALICE]):
        line = line_after()
        model.model.layers[3].output[:, 2].save()
    return line


def ragged_pattern_position(model):
    with model.generate([FRANCE, ALICE], max_new_tokens=2) as tracer:
        for step in tracer.iter[0:2]:
            attention = model.model.layers[3].self_attn.source.attention_interface_1
            line = line_after()
            attention.source.nn_functional_softmax_0.output[:, 7, -1, 0] = 0
    return line


def across_steps(model):
    with model.generate(FRANCE, max_new_tokens=3) as tracer:
        for step in tracer.iter[0:2]:
            if step == 0:
                h = model.model.layers[3].output[0, -1] * 2
            else:
                line = line_after()
                model.model.layers[3].output[0, -1] = h
    return line


def call_decoder_layer(model):
    with model.trace(FRANCE):
        h = model.model.layers[2].output
        line = line_after()
        model.model.layers[3](h).save()
    return line


def result_in_trace(model):
    with model.trace(FRANCE) as tracer:
        line = line_after()
        tracer.result.save()
    return line


def write_computed(model):
    with model.trace(FRANCE):
        h = model.model.layers[3].output * 2
        line = line_after()
        h[:, -1] = 0
    return line


def compute_on_result(model):
    with model.generate(FRANCE, max_new_tokens=2) as tracer:
        line = line_after()
        tracer.result[0, -1].save()
    return line


def cache_in_a_step(model):
    with model.generate(FRANCE, max_new_tokens=2) as tracer:
        for step in tracer.iter[0:2]:
            line = line_after()
            tracer.cache()
    return line


def cache_without_site(model):
    with model.trace(FRANCE) as tracer:
        line = line_after()
        tracer.cache(modules=[model.model])
    return line


def cache_unknown_path(model):
    with model.trace(FRANCE) as tracer:
        line = line_after()
        tracer.cache(modules=["model.model.layers.3.mlpp"])
    return line


def cache_across_prompts(model):
    with model.trace() as tracer:
        with tracer.invoke([FRANCE, ITALY]):
            line = line_after()
            tracer.cache(modules=[model.model.layers[8]])
            model.model.layers[6].output[1, 5] = model.model.layers[6].output[0, 5]
    return line


def cache_read_in_trace(model):
    with model.trace(FRANCE) as tracer:
        cache = tracer.cache()
        line = line_after()
        cache["model.model.layers.3"].output
    return line


def cache_of_the_model(model):
    with model.trace(FRANCE) as tracer:
        cache = tracer.cache()
    line = line_after()
    cache.model.output
    return line


def input_keyword_without_site(model):
    with model.trace(FRANCE):
        line = line_after()
        model.model.layers[3].inputs[1]["attention_mask"].save()
    return line


def inputs_written_with_two(model):
    with model.trace(FRANCE):
        h = model.model.layers[3].mlp.input
        line = line_after()
        model.model.layers[3].mlp.inputs = ((h, h), {})
    return line


def edit(model):
    line = line_after()
    with model.edit() as (tracer, edited):
        edited.model.layers[3].output[:] = 0
    return line


REJECTED = {
    compute_on_result: "tracer.result can only be saved",
    python_if: "Python `if`", item: ".item()", tolist: ".tolist()",
    unsupported_torch_function: "'cumsum' has no nns equivalent",
    unknown_method: "'cumprod'", unknown_module: "did you mean 'mlp'",
    layer_out_of_range: "index 30 is out of range", out_of_order: "out-of-order access",
    cube: "x ** 3", list_index: "list or tensor of indices",
    batch_out_of_range: "batch index 1 is out of range for 1 prompts",
    ragged_position: "different lengths", ragged_pattern_position: "different lengths",
    across_steps: "computed at generation step 0",
    call_decoder_layer: "cannot be called", result_in_trace: "tracer.result in model.trace",
    write_computed: "a write to a computed value",
    cache_in_a_step: "tracer.cache() inside tracer.iter",
    cache_without_site: "nns has no site for the input or output of model.model",
    cache_unknown_path: "did you mean 'model.model.layers.3.mlp'",
    cache_across_prompts: "tracer.cache() of several prompts",
    cache_read_in_trace: "the cache is read inside its trace",
    cache_of_the_model: "nnsc cached no value of model",
    input_keyword_without_site: "no input 'attention_mask'",
    inputs_written_with_two: "written with 2 inputs", edit: "model.edit() is not in nnsc",
}


@pytest.mark.parametrize("program", list(REJECTED), ids=lambda p: p.__name__)
def test_rejected_with_location(program, nnsc_model):
    with pytest.raises(TraceError) as info:
        program(nnsc_model)
    error = info.value
    assert REJECTED[program] in str(error), str(error)
    assert error.filename == __file__
    # The expected line is the one after `line = line_after()` in the program's source.
    source, start = inspect.getsourcelines(program)
    marks = [start + i + 1 for i, text in enumerate(source) if "line = line_after()" in text]
    assert error.lineno in marks, "%s: line %d, expected %s" % (str(error), error.lineno, marks)
    # Nothing ran and the model still works.
    with nnsc_model.trace(FRANCE):
        h = nnsc_model.model.layers[0].output[0, -1].save()
    assert h.shape == (576,)

"""NNsight 0.8.1 code run twice: by nnsight on transformers (the reference, loaded as the parity
harness loads the bundled GGUF) and by nnsc.LanguageModel, with only the model changed. Saves
must agree within the parity tolerance (docs/Parity.md) and generated tokens exactly. The
constructs nnsc cannot compile are in test_nnsight_code_errors.py."""

import nnsc  # first: it chooses the OpenMP wait policy before torch loads
import pytest
import torch

from conftest import (ALICE, FRANCE, ITALY, SPAIN, assert_close, assert_saves_close, served,
                      unit)


# --- the programs: NNsight 0.8.1 code, each returning what it saved ------------------------------

def capture(model):
    with model.trace(FRANCE):
        x = model.model.layers[8].input.save()
        q = model.model.layers[8].self_attn.q_proj.output.save()
        attn = model.model.layers[8].self_attn.output[0].save()
        h = model.model.layers[8].output[0, -1].save()
        logits = model.lm_head.output.save()
    return {"x": x, "q": q, "attn": attn, "h": h, "logits": logits}


def steering_every_step(model):
    steer = unit(0, 40.0)
    rows = []
    with model.generate(FRANCE, max_new_tokens=4, do_sample=False) as tracer:
        for step in tracer.iter[0:4]:
            model.model.layers[12].output += 2.0 * steer
            rows.append(model.model.layers[12].output[0, -1].save())
        result = tracer.result.save()
    return {"rows": rows, "result": result}


def steering_block(model):
    """The block form of tracer.iter (deprecated in NNsight 0.8, still run per step), with a
    comprehension over the function's variables, and a list of steps."""
    steer = unit(10, 40.0)
    layers = model.model.layers
    rows = []
    with model.generate(ITALY, max_new_tokens=4, do_sample=False) as tracer:
        with tracer.iter[0:2]:
            layers[12].output += 2.0 * steer
            rows.append(sum([layers[i].output[0, -1] for i in (13, 14)]).save())
            last = layers[15].output[0, -1].save()
        with tracer.iter[[2, 3]]:
            layers[3].output[0, -1] *= 0.5
        result = tracer.result.save()
    return {"rows": rows, "last": last, "result": result}


def ablation_all(model):
    # nnsight runs nothing after an unbounded tracer.all() in the same block: the result is
    # read in an invoke of its own.
    with model.generate(max_new_tokens=4, do_sample=False) as tracer:
        with tracer.invoke(ALICE):
            for step in tracer.all():
                model.model.layers[0].mlp.output[:] = 0
        with tracer.invoke():
            result = tracer.result.save()
    return {"result": result}


def logit_lens(model):
    layers = model.model.layers
    lens = []
    with model.trace(FRANCE):
        for i in range(len(layers)):
            lens.append(model.lm_head(model.model.norm(layers[i].output[0, -1]))
                        .log_softmax(-1).save())
    return {"lens": lens}


def patching(model):
    with model.generate(max_new_tokens=3, do_sample=False) as tracer:
        barrier = tracer.barrier(2)
        with tracer.invoke(FRANCE):
            h = model.model.layers[6].output[0, 5]
            barrier()
        with tracer.invoke(ITALY):
            barrier()
            model.model.layers[6].output[0, 5] = h
            diff = (model.lm_head.output[0, -1, 7042] - model.lm_head.output[0, -1, 8010]).save()
        with tracer.invoke():
            result = tracer.result.save()
    return {"diff": diff, "result": result}


def skip_layer(model):
    with model.generate(ITALY, max_new_tokens=4, do_sample=False) as tracer:
        model.model.layers[7].skip(model.model.layers[6].output)
        result = tracer.result.save()
    return {"result": result}


def module_calls(model):
    with model.trace(ALICE):
        h = model.model.layers[2].output[0]
        mlp = model.model.layers[3].mlp(h).save()
        q = model.model.layers[3].self_attn.q_proj(h[-1]).save()
        top = model.lm_head(model.model.norm(h[-1])).argmax(-1).save()
    return {"mlp": mlp, "q": q, "top": top}


def batched(model):
    v = unit(1, 30.0)
    with model.trace([FRANCE, ITALY, SPAIN]):
        model.model.layers[4].output[:, -1] += v
        last = model.model.layers[6].output[:, -1].save()
        second = model.model.layers[6].output[1, -1].save()
        mean = model.model.layers[6].output[:, -1].mean(0).save()
        both = torch.stack([model.model.layers[8].output[0, -1],
                            model.model.layers[8].output[2, -1]]).save()
        probs = model.lm_head.output[:, -1].softmax(-1).save()
        top = model.lm_head.output[:, -1].topk(5).values.save()
        ids = model.lm_head.output[:, -1].argmax(-1).save()
    return {"last": last, "second": second, "mean": mean, "both": both, "probs": probs,
            "top": top, "ids": ids}


def batched_generate(model):
    v = unit(2, 60.0)
    with model.generate(max_new_tokens=3, do_sample=False) as tracer:
        with tracer.invoke([FRANCE, SPAIN]):
            model.model.layers[5].output[0, 2:4] = 0
            for step in tracer.iter[:]:
                model.model.layers[9].output[:, -1] += v
        with tracer.invoke():
            result = tracer.result.save()
    return {"result": result}


def directional_ablation(model):
    d = unit(3)
    rows = []
    with model.generate(FRANCE, max_new_tokens=3, do_sample=False) as tracer:
        for step in tracer.iter[0:3]:
            for i in range(0, 30, 3):
                h = model.model.layers[i].output[0]
                model.model.layers[i].output[0][:] = h - (h @ d).unsqueeze(-1) * d
            rows.append(model.model.layers[-1].output[0, -1].save())
        result = tracer.result.save()
    return {"rows": rows, "result": result}


def head_ablation(model):
    rows = []
    with model.generate(ALICE, max_new_tokens=3, do_sample=False) as tracer:
        for step in tracer.iter[0:3]:
            for i in range(4, 9):
                model.model.layers[i].self_attn.o_proj.input.view(1, -1, 9, 64)[:, :, 3] = 0
            rows.append(model.model.layers[9].self_attn.o_proj.input.view(1, -1, 9, 64)[0, -1, 3]
                        .save())
        result = tracer.result.save()
    return {"rows": rows, "result": result}


def arithmetic(model):
    w = torch.randn(576, 4, generator=torch.Generator().manual_seed(4))
    with model.trace(ALICE):
        h = model.model.layers[10].output[0]
        probe = torch.sigmoid(h[-1] @ w).save()
        norm = h.norm(dim=-1).save()
        clipped = torch.where(h[-1] > 0, h[-1], torch.zeros(576)).save()
        joined = torch.cat([h[-1, :4], h[0, :4]], 0).save()
        scaled = ((h[-2:] - h.mean(0)) / 3.0).transpose(0, 1).sum(-1).save()
        count = (h[-1] > 1.0).sum().save()
        maxed = h.max(-1).values.save()
    return {"probe": probe, "norm": norm, "clipped": clipped, "joined": joined,
            "scaled": scaled, "count": count, "maxed": maxed}


def more_operations(model):
    with model.trace([FRANCE, ITALY]):
        h = model.model.layers[11].output
        last = h[..., -1, :]
        clamped = last.clamp(min=-1.0, max=1.0).save()
        gelu = torch.nn.functional.gelu(last[0]).save()
        silu = torch.nn.functional.silu(last[1]).save()
        root = (last[0].abs() ** 0.5).save()
        soft = torch.softmax(last, dim=-1).save()
        logsoft = torch.nn.functional.log_softmax(last[:, :16], -1).save()
        peak = last.max(-1).indices.save()
        total = last.sum().save()
        row = h[1, -3:].reshape(-1).unsqueeze(0).save()
        model.model.layers[12].output[:] *= 0.5
        halved = model.model.layers[12].output[:, -1].save()
    return {"clamped": clamped, "gelu": gelu, "silu": silu, "root": root, "soft": soft,
            "logsoft": logsoft, "peak": peak, "total": total, "row": row, "halved": halved}


def cache_every_layer(model):
    layers = []
    with model.trace(ALICE):
        for layer in model.model.layers:
            layers.append(layer.output.save())
    return {"layers": layers}


def sae_splice(model):
    """A sparse-autoencoder splice: layer 6's output replaced, at every step, by itself plus a
    scaled reconstruction through random encoder and decoder weights; the features saved."""
    generator = torch.Generator().manual_seed(6)
    encoder = torch.randn(576, 32, generator=generator) / 24
    bias = torch.randn(32, generator=generator)
    decoder = torch.randn(32, 576, generator=generator) / 6
    features = []
    with model.generate(FRANCE, max_new_tokens=3, do_sample=False) as tracer:
        for step in tracer.iter[0:3]:
            h = model.model.layers[6].output[0]
            f = torch.relu(h @ encoder + bias)
            model.model.layers[6].output[0][:] = h + f @ decoder
            features.append(f[-1].save())
        result = tracer.result.save()
    return {"features": features, "result": result}


def attention_knockout(model):
    """Attention probabilities through NNsight's .source path (eager attention's softmax):
    head 7's weight on position 0 zeroed in layers 0-9 at every step, layer 29's read."""
    rows = []
    with model.generate(ALICE, max_new_tokens=3, do_sample=False) as tracer:
        for step in tracer.iter[0:3]:
            for i in range(10):
                attention = model.model.layers[i].self_attn.source.attention_interface_1
                attention.source.nn_functional_softmax_0.output[0, 7, :, 0] = 0
            pattern = model.model.layers[29].self_attn.source.attention_interface_1.source \
                .nn_functional_softmax_0.output
            rows.append(pattern[:, 4, -1].save())
        result = tracer.result.save()
    return {"rows": rows, "result": result}


attention_knockout.eager = True  # the reference computes the probabilities with eager attention


def stop_early(model):
    with model.trace(ALICE) as tracer:
        score = (model.model.layers[10].output[0, -1] @ unit(5)).save()
        tracer.stop()
    return {"score": score}


def module_inputs(model):
    """`.inputs`, (args, kwargs) around a module's first input (a keyword of self_attn's),
    read and written."""
    with model.trace([FRANCE, ITALY]):
        args, kwargs = model.model.layers[3].inputs
        layer = args[0][:, -1].save()
        attention = model.model.layers[3].self_attn.inputs[1]["hidden_states"].save()
        args, kwargs = model.model.layers[4].self_attn.inputs
        kwargs["hidden_states"] = kwargs["hidden_states"] * 0.5
        model.model.layers[4].self_attn.inputs = (args, kwargs)
        args, kwargs = model.model.layers[5].mlp.inputs
        model.model.layers[5].mlp.inputs = ((args[0] + 1.0,), kwargs)
        last = model.model.layers[5].output[:, -1].save()
    return {"layer": layer, "attention": attention, "last": last}


PROGRAMS = [capture, steering_every_step, steering_block, ablation_all, logit_lens, patching,
            skip_layer, module_calls, batched, batched_generate, directional_ablation,
            head_ablation, arithmetic, more_operations, cache_every_layer, sae_splice,
            attention_knockout, stop_early, module_inputs]


# --- the comparisons -------------------------------------------------------------------------

@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_same_code_same_saves(program, nnsight_model, nnsc_model):
    if getattr(program, "eager", False):
        previous = nnsight_model._module.config._attn_implementation
        nnsight_model._module.set_attn_implementation("eager")
        try:
            expected = program(nnsight_model)
        finally:
            nnsight_model._module.set_attn_implementation(previous)
    else:
        expected = program(nnsight_model)
    assert_saves_close(program(nnsc_model), expected)


def test_interventions_change_tokens(nnsc_model):
    """The steering, ablation and skip programs act: their tokens differ from a plain run."""
    for program, prompt in ((steering_every_step, FRANCE), (ablation_all, ALICE),
                            (skip_layer, ITALY), (batched_generate, FRANCE),
                            (attention_knockout, ALICE)):
        result = program(nnsc_model)["result"]
        generated = result.shape[1] - len(nnsc_model.tokenizer.encode(prompt))
        [plain] = nnsc_model.llm.generate(prompt, max_tokens=generated, use_tqdm=False)
        assert result[0, -generated:].tolist() != plain.token_ids, program.__name__


def test_prompts_of_different_lengths(nnsight_model, nnsc_model):
    """nnsc runs each prompt of a batch alone, so a batch of prompts of different lengths gives
    what nnsight gives for each prompt alone (nnsight's own batch pads them on the left), padded
    on the left to one shape."""
    def last_tokens(model, prompts):
        with model.trace(prompts):
            h = model.model.layers[12].output[:, -1].save()
            top = model.lm_head.output[:, -1].argmax(-1).save()
        return h, top
    h, top = last_tokens(nnsc_model, [FRANCE, ALICE])
    for i, prompt in enumerate((FRANCE, ALICE)):
        ref_h, ref_top = last_tokens(nnsight_model, [prompt])
        assert_close(h[i:i + 1], ref_h, "h[%d]" % i)
        assert_close(top[i:i + 1], ref_top, "top[%d]" % i)
    with nnsc_model.trace([FRANCE, ALICE]):
        whole = nnsc_model.model.layers[1].output.save()
    assert whole.shape == (2, 8, 576)
    assert bool((whole[1, 0] == 0).all()) and bool((whole[1, 1] != 0).any())

    def generated(model):
        with model.generate([FRANCE, ALICE], max_new_tokens=3, do_sample=False) as tracer:
            result = tracer.result.save()
        return result
    # The token ids are laid out as transformers' generate lays out a padded batch.
    assert_close(generated(nnsc_model), generated(nnsight_model), "result")


def test_program_is_inspectable(nnsc_model):
    with nnsc_model.generate([FRANCE, ITALY], max_new_tokens=2) as tracer:
        for step in tracer.iter[0:2]:
            nnsc_model.model.layers[3].output[:, -1] *= 0.5
    assert "model.layers.3.output[-1] *= 0.5" in tracer.program_source
    # Steps that do the same thing are one nns loop.
    assert "for step in steps[0:2] {" in tracer.program_source
    assert isinstance(tracer.program, nnsc.Program)
    # Both prompts do the same, so they share one program and one batch.
    assert len(tracer.program_sources) == 1
    # The one program runs again as plain nnsc.
    [r] = nnsc_model.llm.generate(FRANCE, tracer.program, max_tokens=2, use_tqdm=False)
    assert r.error is None


def test_traced_program_runs_on_nns_serve(nnsc_model):
    """The notebook-to-service path: the traced program's source, sent to nns-serve with the
    trace's params, gives the saves the trace gave."""
    v = unit(4, 20.0)
    with nnsc_model.generate(FRANCE, max_new_tokens=3, do_sample=False) as tracer:
        for step in tracer.iter[0:3]:
            nnsc_model.model.layers[6].output[:, -1] += v
        top = nnsc_model.lm_head.output[0, -1].argmax(-1).save()
        result = tracer.result.save()
    [source] = tracer.program_sources
    [params] = tracer.program_params
    with served() as url:
        [r] = nnsc.Client(url).generate(FRANCE, source, params, max_tokens=3, use_tqdm=False)
    assert r.token_ids == result[0, -3:].tolist()
    assert [int(r.saves[n]) for n in sorted(r.saves)] == [int(top)]


def steered_run(model, prompts, v, scale):
    """One `with` line run again and again: the program cache's subject."""
    with model.generate(prompts, max_new_tokens=3, do_sample=False) as tracer:
        for step in tracer.iter[0:3]:
            model.model.layers[6].output[:, -1] += v
            model.model.layers[9].output[:] *= scale
        rows = model.model.layers[12].output[:, -1].save()
        result = tracer.result.save()
    return tracer, rows, result


def test_cached_per_code_location(nnsc_model):
    """A block run again with other steering vectors and prompts of the same structure reuses
    its program (tracer.reused) and gives what a fresh trace gives; a changed Python number,
    baked into the program as a literal, and another prompt count are traced anew, never served
    the stale program."""
    runs = [([FRANCE, ITALY], unit(7, 30.0), 0.5),
            ([ALICE, SPAIN], unit(8, 50.0), 0.5),          # other prompts (and lengths), vector
            ([FRANCE, ITALY], unit(9, 30.0), 0.5),         # the same prompts, another vector
            ([FRANCE, ITALY], unit(7, 30.0), 0.25),        # the literal changes
            ([FRANCE, ITALY, ALICE], unit(7, 30.0), 0.25)]  # the prompt count changes
    nnsc_model._programs_at.clear()
    looped = [steered_run(nnsc_model, *run) for run in runs]
    assert [t.reused for t, _, _ in looped] == [False, True, True, False, False]
    assert "*= 0.25" in looped[3][0].program_source
    assert "*= 0.5" not in looped[3][0].program_source
    for run, (_, rows, result) in zip(runs, looped):
        nnsc_model._programs_at.clear()
        fresh, fresh_rows, fresh_result = steered_run(nnsc_model, *run)
        assert not fresh.reused
        assert torch.equal(result, fresh_result)
        assert_close(rows, fresh_rows, "rows")
    # The rebound vector and the new literal act.
    assert not torch.equal(looped[0][1], looped[2][1])
    assert not torch.equal(looped[0][1], looped[3][1])


def test_envoy_tree(nnsc_model):
    layers = nnsc_model.model.layers
    assert len(layers) == 30
    assert repr(layers[-1]) == "Envoy(model.layers.29)"
    assert repr(layers[3].self_attn.q_proj) == "Envoy(model.layers.3.self_attn.q_proj)"
    assert [repr(layer) for layer in layers][:2] == ["Envoy(model.layers.0)",
                                                     "Envoy(model.layers.1)"]

"""nnsight twin of examples/canonical/11-patching.nns: two invokes in one batch; the clean
prompt's layer-6 residual at position 5 replaces the corrupt prompt's, and the corrupt prompt's
logit difference ' Paris' - ' Rome' is saved (with the corrupt request). nnsight needs a
barrier to hand h from one invoke to the next (nnsc orders it statically) and an empty invoke to
read generate's result."""
PROGRAM = "examples/canonical/11-patching.nns"
PROMPTS = ["france", "italy"]
STEPS = 3


def params(ctx):
    return {"tok_a": ctx.token(" Paris"), "tok_b": ctx.token(" Rome")}


def nnsight(lm, prompts, params, steps):
    tok_a, tok_b = params["tok_a"], params["tok_b"]
    with lm.generate(max_new_tokens=steps, do_sample=False) as tracer:
        barrier = tracer.barrier(2)
        with tracer.invoke([prompts[0]]):
            h = lm.model.layers[6].output[0, 5]
            barrier()
        with tracer.invoke([prompts[1]]):
            barrier()
            lm.model.layers[6].output[0, 5] = h
            diff = (lm.lm_head.output[0, -1, tok_a] - lm.lm_head.output[0, -1, tok_b]).save()
        with tracer.invoke():
            result = tracer.result.save()
    return [{}, {"diff": diff}], result

"""nnsight twin of 13-patch-per-position.nns."""
PROGRAM = "test/Integration/parity/programs/13-patch-per-position.nns"
PROMPTS = ["france", "italy", "italy", "italy"]
STEPS = 2


def params(ctx):
    return {"tok_a": ctx.token(" Paris"), "tok_b": ctx.token(" Rome")}


def nnsight(lm, prompts, params, steps):
    tok_a, tok_b = params["tok_a"], params["tok_b"]
    saves = [{}]
    with lm.generate(max_new_tokens=steps, do_sample=False) as tracer:
        barrier = tracer.barrier(4)
        with tracer.invoke([prompts[0]]):
            h = lm.model.layers[4].output[0]
            barrier()
        for position, prompt in zip((2, 3, 4), prompts[1:]):
            with tracer.invoke([prompt]):
                barrier()
                lm.model.layers[4].output[0, position] = h[position]
                logits = lm.lm_head.output[0, -1]
                saves.append({f"d{position}": (logits[tok_a] - logits[tok_b]).save()})
        with tracer.invoke():
            result = tracer.result.save()
    return saves, result

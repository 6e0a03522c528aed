"""nnsight twin of 12-patch-last-token.nns."""
PROGRAM = "test/Integration/parity/programs/12-patch-last-token.nns"
PROMPTS = ["france", "italy"]
STEPS = 3


def nnsight(lm, prompts, params, steps):
    with lm.generate(max_new_tokens=steps, do_sample=False) as tracer:
        barrier = tracer.barrier(2)
        with tracer.invoke([prompts[0]]):
            h = lm.model.layers[10].output[0, -1]
            barrier()
        with tracer.invoke([prompts[1]]):
            barrier()
            lm.model.layers[10].output[0, -1] = h
            logp = lm.lm_head.output[0, -1].log_softmax(-1).save()
        with tracer.invoke():
            result = tracer.result.save()
    return [{}, {"logp": logp}], result

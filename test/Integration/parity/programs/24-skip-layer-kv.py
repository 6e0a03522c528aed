"""nnsight twin of 24-skip-layer-kv.nns: layer 7 skipped in the prompt pass, then run at the
later steps against a cache that holds only the positions it computed."""
PROGRAM = "test/Integration/parity/programs/24-skip-layer-kv.nns"
PROMPTS = ["italy"]
STEPS = 4
CHANGES_TOKENS = True


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        h = list().save()
        for step in tracer.iter[0:steps]:
            if step == 0:
                lm.model.layers[7].skip(lm.model.layers[6].output)
            else:
                h.append(lm.model.layers[7].output[0, -1])
        result = tracer.result.save()
    return [{f"h.{s + 1}": v for s, v in enumerate(h)}], result

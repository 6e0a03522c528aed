"""nnsight twin of 23-mlp-sites.nns."""
PROGRAM = "test/Integration/parity/programs/23-mlp-sites.nns"
PROMPTS = ["italy"]
STEPS = 3
CHANGES_TOKENS = True


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        o, up, h = list().save(), list().save(), list().save()
        for step in tracer.iter[0:steps]:
            layer = lm.model.layers[5]
            o.append(layer.self_attn.o_proj.output[0, -1])
            layer.mlp.act_fn.output *= 1.5
            up.append(layer.mlp.up_proj.output[0, -1])
            h.append(layer.output[0, -1])
        result = tracer.result.save()
    saves = {}
    for s in range(steps):
        saves[f"o.{s}"], saves[f"up.{s}"], saves[f"h.{s}"] = o[s], up[s], h[s]
    return [saves], result

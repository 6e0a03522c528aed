"""nnsight twin of 21-cache-steps.nns; saved under the site path plus .<step>."""
PROGRAM = "test/Integration/parity/programs/21-cache-steps.nns"
PROMPTS = ["alice"]
STEPS = 4


def nnsight(lm, prompts, params, steps):
    with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        cache = list().save()
        for step in tracer.iter[0:3]:
            for i in range(30):
                cache.append((f"model.layers.{i}.mlp.output", lm.model.layers[i].mlp.output[0]))
                cache.append((f"model.layers.{i}.output", lm.model.layers[i].output[0]))
        result = tracer.result.save()
    per_step = 2 * 30
    return [{f"{name}.{k // per_step}": v for k, (name, v) in enumerate(cache)}], result

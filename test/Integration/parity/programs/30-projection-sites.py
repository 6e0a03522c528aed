"""nnsight twin of 30-projection-sites.nns."""
PROGRAM = "test/Integration/parity/programs/30-projection-sites.nns"
PROMPTS = ["tower", "alice"]
STEPS = 3


def nnsight(lm, prompts, params, steps):
    saves, results = [], []
    for prompt in prompts:
        with lm.generate([prompt], max_new_tokens=steps, do_sample=False) as tracer:
            m, qh, q = list().save(), list().save(), list().save()
            v, d = list().save(), list().save()
            for step in tracer.iter[0:steps]:
                h = lm.model.layers[2].output[0, -1]
                m.append(lm.model.layers[3].mlp(h))
                qh.append(lm.model.layers[3].self_attn.q_proj(h))
                attn = lm.model.layers[3].self_attn
                q.append(attn.q_proj.output[0, -1])
                attn.k_proj.output *= 0.5
                v.append(attn.v_proj.output[0, -1])
                d.append(lm.model.layers[7].mlp.down_proj.input[0, -1])
            result = tracer.result.save()
        rows = {"m": m, "qh": qh, "q": q, "v": v, "d": d}
        saves.append({f"{name}.{s}": rows[name][s] for name in rows for s in range(steps)})
        results.append(result[0])
    return saves, results

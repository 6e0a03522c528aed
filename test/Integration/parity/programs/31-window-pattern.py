"""nnsight twin of 31-window-pattern.nns: reads and knockout writes of eager attention's softmax
over a prompt past Gemma 3's sliding window."""
PROGRAM = "test/Integration/parity/programs/31-window-pattern.nns"
PROMPTS = ["long"]
STEPS = 3

import attention_source  # noqa: E402


def nnsight(lm, prompts, params, steps):
    previous = attention_source.eager(lm)
    try:
        with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
            local_row, global_row = list().save(), list().save()
            for step in tracer.iter[0:1]:
                attention_source.pattern(lm, 0)[0, 1, :, 1] = 0
                local_row.append(attention_source.pattern(lm, 4)[0, 0, -1])
                attention_source.pattern(lm, 5)[0, 1, :, 1] = 0
                global_row.append(attention_source.pattern(lm, 5)[0, 0, -1])
            result = tracer.result.save()
    finally:
        lm._module.set_attn_implementation(previous)
    return [{"local_row.0": local_row[0], "global_row.0": global_row[0]}], result

"""nnsight twin of 31-window-pattern.nns: reads and knockout writes of eager attention's softmax
over a prompt past Gemma 3's sliding window."""
import importlib.util
import os

PROGRAM = "test/Integration/parity/programs/31-window-pattern.nns"
PROMPTS = ["long"]
STEPS = 3

_spec = importlib.util.spec_from_file_location(
    "attention_pattern", os.path.join(os.path.dirname(__file__), "28-attention-pattern.py"))
_capture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_capture)


def nnsight(lm, prompts, params, steps):
    previous = _capture.eager(lm)
    try:
        with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
            local_row, global_row = list().save(), list().save()
            for step in tracer.iter[0:1]:
                _capture.pattern(lm, 0)[0, 1, :, 1] = 0
                local_row.append(_capture.pattern(lm, 4)[0, 0, -1])
                _capture.pattern(lm, 5)[0, 1, :, 1] = 0
                global_row.append(_capture.pattern(lm, 5)[0, 0, -1])
            result = tracer.result.save()
    finally:
        lm._module.set_attn_implementation(previous)
    return [{"local_row.0": local_row[0], "global_row.0": global_row[0]}], result

"""nnsight twin of 29-attention-knockout.nns: an in-place write into eager attention's softmax."""
import importlib.util
import os

PROGRAM = "test/Integration/parity/programs/29-attention-knockout.nns"
PROMPTS = ["alice"]
STEPS = 4
CHANGES_TOKENS = True

_spec = importlib.util.spec_from_file_location(
    "attention_pattern", os.path.join(os.path.dirname(__file__), "28-attention-pattern.py"))
_capture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_capture)


def nnsight(lm, prompts, params, steps):
    previous = _capture.eager(lm)
    try:
        with lm.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
            r, p = list().save(), list().save()
            for step in tracer.iter[0:steps]:
                for i in range(30):
                    _capture.pattern(lm, i)[0, 7, :, 0] = 0
                    if i == 20:
                        r.append(lm.model.layers[20].output[0, -1])
                p.append(_capture.pattern(lm, 29)[0, 7, -1])
            result = tracer.result.save()
    finally:
        lm._module.set_attn_implementation(previous)
    saves = {f"r.{s}": v for s, v in enumerate(r)}
    saves.update({f"p.{s}": v for s, v in enumerate(p)})
    return [saves], result

"""nnsight twin of 25-edit-capture.nns under the edit 25-edit-steer.nns: NNsight's
`model.edit()` stores the steering (on every generation step) on an edited copy of the model,
and the capture runs on that copy, so it sees the edited values."""
PROGRAM = "test/Integration/parity/programs/25-edit-capture.nns"
EDIT = "test/Integration/parity/programs/25-edit-steer.nns"
EDIT_PARAMS = ["d"]
PROMPTS = ["tower"]
STEPS = 4
CHANGES_TOKENS = True


def params(ctx):
    return {"d": ctx.unit_vector() * 60.0}


def nnsight(lm, prompts, params, steps):
    d = params["d"]
    with lm.edit() as (tracer, edited):
        for step in tracer.iter[:]:
            edited.model.layers[5].output += d
    with edited.generate(prompts, max_new_tokens=steps, do_sample=False) as tracer:
        h5 = edited.model.layers[5].output[0, -1].save()
        h9 = edited.model.layers[9].output[0].save()
        tops = list().save()
        for step in tracer.iter[0:3]:
            tops.append(edited.lm_head.output[0, -1].argmax())
        result = tracer.result.save()
    saves = {"h5": h5, "h9": h9}
    for s in range(3):
        saves[f"top.{s}"] = tops[s]
    return [saves], result

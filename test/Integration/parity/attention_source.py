"""nnsight access to eager attention's softmax, shared by the attention-pattern programs
(programs/28, 29, 31). Lives beside parity.py: every programs/*.py is an experiment."""


def pattern(lm, layer):
    """[batch, heads, T, S]: the probabilities of eager_attention_forward's softmax."""
    attention = lm.model.layers[layer].self_attn.source.attention_interface_1
    return attention.source.nn_functional_softmax_0.output


def eager(lm):
    """Switches the model to eager attention (the only one that computes the probabilities)
    and returns the implementation to restore."""
    previous = lm._module.config._attn_implementation
    lm._module.set_attn_implementation("eager")
    return previous

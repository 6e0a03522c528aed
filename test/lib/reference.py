"""The reference side of end-to-end tests: transformers on the same weights nnsc runs.

transformers dequantizes the bundled GGUF in Python, which takes minutes on this machine. The
converted model and tokenizer are therefore saved once as a Hugging Face directory under
$NNSC_CACHE/reference/ (keyed by the GGUF's SHA-256 and the transformers version) and every later
load takes seconds. A file lock keeps parallel lit workers from converting at the same time.

Import with `sys.path.insert(0, os.path.join(<nnsc source root>, "test", "lib"))`.
"""
import fcntl
import hashlib
import os
import sys

import torch
import transformers


def _cache_root():
    return os.environ.get("NNSC_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "nnsc"))


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _convert(gguf_path):
    """transformers' own GGUF loading (config, dequantization, q/k un-permutation), as in
    from_pretrained(directory, gguf_file=name) minus its device placement."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    directory, name = os.path.split(gguf_path)
    config = transformers.AutoConfig.from_pretrained(directory, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = load_gguf_checkpoint(gguf_path, return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if m != "lm_head.weight"]:
        sys.exit("transformers GGUF load: missing %s, unexpected %s" % (missing, unexpected))
    model.tie_weights()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=name)
    return model.eval(), tokenizer


def gguf_reference_dir(gguf_path):
    """A Hugging Face directory holding transformers' conversion of `gguf_path`."""
    key = "%s-transformers-%s" % (_sha256(gguf_path)[:16], transformers.__version__)
    target = os.path.join(_cache_root(), "reference", key)
    if os.path.exists(os.path.join(target, "done")):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(target, "done")):
            print("reference: converting %s with transformers (once; cached in %s)"
                  % (gguf_path, target), file=sys.stderr, flush=True)
            model, tokenizer = _convert(gguf_path)
            model.save_pretrained(target)
            tokenizer.save_pretrained(target)
            open(os.path.join(target, "done"), "w").close()
    return target


def load_gguf_reference(gguf_path):
    """(model, tokenizer): transformers' fp32 model and tokenizer for `gguf_path`."""
    directory = gguf_reference_dir(gguf_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    return model.eval(), tokenizer

"""Writes broken models for nns-run's error tests into OUTDIR.

tiny/          a valid tiny Llama (transformers save_pretrained)
missing/       tiny with 'model.layers.1.mlp.up_proj.weight' removed
shape/         tiny with 'model.norm.weight' of the wrong shape
int-dtype/     tiny with 'model.norm.weight' stored as I32
corrupt/       tiny whose model.safetensors header is not JSON
truncated-st/  tiny whose model.safetensors lost its last bytes
gpt2/          config.json with model_type gpt2
truncated.gguf the first 100000 bytes of GGUF
q8k.gguf       a Llama GGUF whose blk.0.ffn_down.weight is Q8_K (a type the loader does not read:
               ggml's intermediate for K-quant products, not a weight format)
gpt2.gguf      a GGUF with general.architecture gpt2
"""

import os
import shutil
import sys

import gguf
import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file


def tiny(out):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(out)


def variant(src, dst, edit):
    shutil.copytree(src, dst)
    path = os.path.join(dst, "model.safetensors")
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path, metadata={"format": "pt"})


def write_gguf(path, arch, ffn_down_type):
    w = gguf.GGUFWriter(path, arch)
    hidden, inter, heads, vocab = 64, 256, 4, 32
    w.add_block_count(1)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(inter)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_context_length(128)
    w.add_layer_norm_rms_eps(1e-5)
    f32 = lambda *shape: np.random.rand(*shape).astype(np.float32)
    w.add_tensor("token_embd.weight", f32(vocab, hidden))
    w.add_tensor("output_norm.weight", f32(hidden))
    w.add_tensor("blk.0.attn_norm.weight", f32(hidden))
    w.add_tensor("blk.0.ffn_norm.weight", f32(hidden))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor("blk.0.%s.weight" % name, f32(hidden, hidden))
    w.add_tensor("blk.0.ffn_gate.weight", f32(inter, hidden))
    w.add_tensor("blk.0.ffn_up.weight", f32(inter, hidden))
    if ffn_down_type == "Q8_K":
        # [hidden, inter] in Q8_K: 256 elements per 292-byte block along the inner dimension.
        raw = np.zeros((hidden, inter // 256 * 292), dtype=np.uint8)
        w.add_tensor("blk.0.ffn_down.weight", raw, raw_dtype=gguf.GGMLQuantizationType.Q8_K)
    else:
        w.add_tensor("blk.0.ffn_down.weight", f32(hidden, inter))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out, real_gguf = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "tiny")
    tiny(base)
    variant(base, os.path.join(out, "missing"),
            lambda t: t.pop("model.layers.1.mlp.up_proj.weight"))
    variant(base, os.path.join(out, "shape"),
            lambda t: t.__setitem__("model.norm.weight", torch.ones(31)))
    variant(base, os.path.join(out, "int-dtype"),
            lambda t: t.__setitem__("model.norm.weight", torch.ones(32, dtype=torch.int32)))
    for name, edit in (("corrupt", lambda b: b[:8] + b"{not json" + b[17:]),
                       ("truncated-st", lambda b: b[:-100])):
        shutil.copytree(base, os.path.join(out, name))
        path = os.path.join(out, name, "model.safetensors")
        data = open(path, "rb").read()
        open(path, "wb").write(edit(data))
    os.makedirs(os.path.join(out, "gpt2"))
    with open(os.path.join(out, "gpt2", "config.json"), "w") as f:
        f.write('{"model_type": "gpt2", "n_embd": 64}')
    with open(real_gguf, "rb") as f:
        head = f.read(100000)
    open(os.path.join(out, "truncated.gguf"), "wb").write(head)
    write_gguf(os.path.join(out, "q8k.gguf"), "llama", "Q8_K")
    write_gguf(os.path.join(out, "gpt2.gguf"), "gpt2", "F32")


if __name__ == "__main__":
    main()

"""Writes a copy of a GGUF model with an lm_head of its own: an `output.weight` tensor, the
Q8_0 `token_embd.weight` with every block's fp16 scale doubled (exact), appended after the
input's tensors.

usage: make_untied_model.py INPUT.gguf OUTPUT.gguf

A llama-architecture GGUF without `output.weight` ties its lm_head to the embedding; with it the
model is untied, as most larger models are. Its logits are twice the input model's, so its
greedy text is the input's while an lm_head that read the embedding in its place would give
half the logits. Every metadata key and value, the input's tensors and the alignment are copied
unchanged; the written file is read back and compared with the input.
"""
import sys

import gguf
import numpy as np

from make_kquant_model import copy_metadata

EMBEDDING, LM_HEAD = "token_embd.weight", "output.weight"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    src, dst = sys.argv[1:]
    reader = gguf.GGUFReader(src)
    names = [t.name for t in reader.tensors]
    if LM_HEAD in names or EMBEDDING not in names:
        sys.exit("%s: expected %s and no %s" % (src, EMBEDDING, LM_HEAD))
    writer = gguf.GGUFWriter(dst, reader.get_field(gguf.Keys.General.ARCHITECTURE).contents())
    copy_metadata(reader, writer)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
    embedding = reader.tensors[names.index(EMBEDDING)]
    if embedding.tensor_type != gguf.GGMLQuantizationType.Q8_0:
        sys.exit("%s: %s is %s, expected Q8_0" % (src, EMBEDDING, embedding.tensor_type.name))
    # Q8_0 blocks: an fp16 scale, then 32 int8 quants (34 bytes).
    blocks = np.array(embedding.data).reshape(embedding.data.shape[0], -1, 34)
    scales = np.ascontiguousarray(blocks[:, :, :2]).view(np.float16) * np.float16(2)
    if not np.all(np.isfinite(scales)):
        sys.exit("%s: a doubled scale of %s overflows fp16" % (src, EMBEDDING))
    blocks[:, :, :2] = scales.view(np.uint8)
    lm_head = blocks.reshape(embedding.data.shape)
    writer.add_tensor(LM_HEAD, lm_head, raw_dtype=embedding.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    out = gguf.GGUFReader(dst)
    if [t.name for t in out.tensors] != names + [LM_HEAD]:
        sys.exit("%s: tensor names or order differ from the input's plus %s" % (dst, LM_HEAD))
    for old, data, new in zip(reader.tensors + [embedding],
                              [t.data for t in reader.tensors] + [lm_head], out.tensors):
        if (new.tensor_type != old.tensor_type or list(new.shape) != list(old.shape)
                or new.data.tobytes() != data.tobytes()):
            sys.exit("%s: tensor %s differs from what was written" % (dst, new.name))
    print("make_untied_model: wrote %s (%s: %s with its scales doubled)"
          % (dst, LM_HEAD, EMBEDDING), flush=True)


if __name__ == "__main__":
    main()

"""Writes a copy of a GGUF model whose ffn_down weights are K-quants (Q4_K and Q6_K; with --q5
also Q5_K, with --low-bits Q2_K and Q3_K instead) or, with --iq4, IQ4_XS, and with --q5 or --iq4
whose other projections are Q5_0 and Q5_1 or IQ4_NL.

usage: make_kquant_model.py [--q5 | --low-bits | --iq4] INPUT.gguf OUTPUT.gguf

OUTPUT equals INPUT (every metadata key and value, tensor names, order, shapes, types and bytes,
alignment) except that each `blk.N.ffn_down.weight` is re-quantized from gguf-py's dequantization
of the input tensor: to Q4_K when N is even, to Q6_K when N is odd. gguf-py can only dequantize
K-quants, so the encoders are here: ggml's block layouts (super-blocks of 256 weights along a
row) with plain scale choices (min/max per 32-weight sub-block for Q4_K, max |w| per 16-weight
sub-block for Q6_K) instead of ggml's iterative search. They are deterministic: the output is
byte-identical from run to run.

With --low-bits, `blk.N.ffn_down.weight` becomes Q2_K when N is even and Q3_K when N is odd (the
2- and 3-bit types of llama.cpp's Q2_K and Q3_K_* files), with plain scale choices as well:
min/max per 16-weight sub-block for Q2_K, max |w| per sub-block for Q3_K.

With --q5, `blk.N.ffn_down.weight` becomes Q4_K, Q5_K or Q6_K for N % 3 = 0, 1, 2 (Q5_K's
encoder is Q4_K's with quants of 5 bits, the fifth in its own bit plane), and each
`blk.N.{attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up}.weight` is re-quantized from gguf-py's
dequantization: to Q5_0 when N is even, to Q5_1 when N is odd, by gguf-py's own encoder
(gguf.quants.quantize, a port of ggml's quantize_row_q5_0/q5_1), except attn_v of blocks
N % 4 = 1, which becomes Q8_0 (as on some layers of llama.cpp's Q4_K_M files, whose v rows then
fuse with q/k rows of another format). These are the types of llama.cpp's Q4_K_M and Q5_K_M
files of SmolLM2-135M: rows of 576 weights are not a multiple of 256, so llama.cpp falls back
from Q4_K to Q5_0, from Q5_K to Q5_1 and from Q6_K to Q8_0 there, while ffn_down (rows of 1536)
keeps its K-quants.

With --iq4, `blk.N.ffn_down.weight` becomes IQ4_XS and each
`blk.N.{attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up}.weight` IQ4_NL: the types of
llama.cpp's IQ4_XS file of SmolLM2-135M, where rows of 576 weights fall back from IQ4_XS to
IQ4_NL. Both map 4-bit quants through ggml's fixed non-linear codebook kvalues_iq4nl (-127 ...
113), and gguf-py cannot quantize them, so their encoders are here as well, with plain choices
instead of ggml's search: per 32-weight block of IQ4_NL and sub-block of IQ4_XS the scale that
maps the largest |w| to -127 (for IQ4_XS rounded to a 6-bit multiple of an fp16 super-block
scale, max |scale| / 31), and each quant the nearest codebook value.

Each re-quantized tensor is dequantized again with gguf-py and its error, relative to the RMS of
its weights, is printed; an error far above what the format allows (a layout mistake) fails the
script. The written file is read back and compared with the input.
"""
import sys
import time

import gguf
import numpy as np
from gguf import GGMLQuantizationType as QType
from gguf.quants import dequantize, quantize

# Relative RMS round-trip error above which the encoding is wrong, not merely lossy.
MAX_RMS_ERROR = {QType.Q4_K: 0.15, QType.Q5_K: 0.08, QType.Q6_K: 0.05, QType.Q5_0: 0.10,
                 QType.Q5_1: 0.10, QType.Q8_0: 0.05, QType.Q2_K: 0.45, QType.Q3_K: 0.25,
                 QType.IQ4_NL: 0.13, QType.IQ4_XS: 0.13}
# ggml's kvalues_iq4nl: what the 4-bit quants of IQ4_NL and IQ4_XS decode to (times a scale).
KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                         np.float32)
# The tensors (blk.N.KIND.weight) that --q5 re-quantizes to Q5_0 / Q5_1 and --iq4 to IQ4_NL.
Q5_KINDS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up")


def target_type(name, mode):
    """The quantization for tensor `name` (mode: None, "--q5", "--low-bits" or "--iq4"), or None
    where it is copied unchanged."""
    parts = name.split(".")
    if len(parts) != 4 or parts[0] != "blk" or parts[3] != "weight":
        return None
    layer = int(parts[1])
    even = layer % 2 == 0
    q5 = mode == "--q5"
    iq4 = mode == "--iq4"
    if parts[2] == "ffn_down" and iq4:
        return QType.IQ4_XS
    if parts[2] == "ffn_down" and mode == "--low-bits":
        return QType.Q2_K if even else QType.Q3_K
    if parts[2] == "ffn_down" and q5:
        return (QType.Q4_K, QType.Q5_K, QType.Q6_K)[layer % 3]
    if parts[2] == "ffn_down":
        return QType.Q4_K if even else QType.Q6_K
    if q5 and parts[2] == "attn_v" and layer % 4 == 1:
        return QType.Q8_0  # as llama.cpp's Q4_K_M on some layers: q/k/v fuse across formats
    if q5 and parts[2] in Q5_KINDS:
        return QType.Q5_0 if even else QType.Q5_1
    if iq4 and parts[2] in Q5_KINDS:
        return QType.IQ4_NL
    return None


def divide(a, b):
    """a / b, 0 where b is 0."""
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape, np.float32), where=b != 0)


def fp16(x):
    """x rounded to float16: (the float16 array, its float32 values)."""
    half = x.astype(np.float16)
    return half, half.astype(np.float32)


def half_bytes(half):
    """(n,) float16 -> (n, 2) little-endian bytes."""
    return half.astype("<f2").reshape(-1, 1).view(np.uint8)


def pack_q4_k_scales(sc, m):
    """(n, 8) 6-bit scales and mins -> (n, 12) bytes, ggml's get_scale_min_k4 layout: bytes 0-3
    hold sc[0:4] and the top 2 bits of sc[4:8], bytes 4-7 m[0:4] and the top 2 bits of m[4:8],
    bytes 8-11 the low 4 bits of sc[4:8] (low nibble) and m[4:8] (high nibble)."""
    lo_sc, hi_sc, lo_m, hi_m = sc[:, :4], sc[:, 4:], m[:, :4], m[:, 4:]
    return np.concatenate([lo_sc | (hi_sc >> 4) << 6,
                           lo_m | (hi_m >> 4) << 6,
                           (hi_sc & 0xF) | (hi_m & 0xF) << 4], axis=1)


def min_max_sub_blocks(blocks, sub_blocks, top, scale_top):
    """(n, 256) float32 -> min/max per sub-block for the formats with minimums (Q2_K, Q4_K,
    Q5_K): (fp16 d, fp16 dmin, scales and mins (n, sub_blocks) in [0, scale_top], quants
    (n, sub_blocks, 256 / sub_blocks) in [0, top]). Sub-block j decodes as
    d * sc[j] * q - dmin * m[j]."""
    x = blocks.reshape(-1, sub_blocks, 256 // sub_blocks)
    low = np.minimum(x.min(axis=2), 0)  # the offset -dmin * m can only lower the weights
    scale = (x.max(axis=2) - low) / top
    d16, d = fp16(scale.max(axis=1) / scale_top)
    dmin16, dmin = fp16(-low.min(axis=1) / scale_top)
    sc = np.clip(np.rint(divide(scale, d[:, None])), 0, scale_top).astype(np.uint8)
    m = np.clip(np.rint(divide(-low, dmin[:, None])), 0, scale_top).astype(np.uint8)
    step = (d[:, None] * sc)[:, :, None]
    offset = (dmin[:, None] * m)[:, :, None]
    q = np.clip(np.rint(divide(x + offset, step)), 0, top).astype(np.uint8)
    return d16, dmin16, sc, m, q


def signed_sub_blocks(blocks, offset, scale_bits):
    """(n, 256) float32 -> max |w| per 16-weight sub-block for the signed formats (Q3_K: quants
    q - 4, 6-bit scales; Q6_K: q - 32, 8-bit): (fp16 d, signed scales (n, 16), quants
    (n, 16, 16) in [0, 2 offset)). As ggml, the largest |w| of a sub-block decodes from
    q - offset = -offset, and the largest scale from -2^(scale_bits - 1)."""
    x = blocks.reshape(-1, 16, 16)
    extreme = np.take_along_axis(x, np.abs(x).argmax(axis=2)[:, :, None], axis=2)[:, :, 0]
    scale = extreme / -offset
    largest = np.take_along_axis(scale, np.abs(scale).argmax(axis=1)[:, None], axis=1)[:, 0]
    half = 2 ** (scale_bits - 1)
    d16, d = fp16(largest / -half)
    sc = np.clip(np.rint(divide(scale, d[:, None])), -half, half - 1).astype(np.int32)
    step = (d[:, None] * sc)[:, :, None]
    q = (np.clip(np.rint(divide(x, step)), -offset, offset - 1) + offset).astype(np.uint8)
    return d16, sc, q


def encode_k_sub_blocks(blocks, top):
    """(n, 256) float32 -> the fields Q4_K (top 15) and Q5_K (top 31) share: the fp16 d and dmin
    as bytes, the 12 bytes of 6-bit scales and mins, and the quants (n, 8, 32) in [0, top]."""
    d16, dmin16, sc, m, q = min_max_sub_blocks(blocks, 8, top, 63)
    header = np.concatenate([half_bytes(d16), half_bytes(dmin16), pack_q4_k_scales(sc, m)], axis=1)
    return header, q


def nibbles(q):
    """(n, 8, 32) quants -> (n, 128) bytes: byte l of 64-weight group g holds sub-block 2g's
    quant l (low 4 bits) in the low nibble, 2g+1's in the high."""
    q = q & 0xF
    return (q[:, 0::2] | q[:, 1::2] << 4).reshape(-1, 128)


def encode_q4_k(blocks):
    """(n, 256) float32 -> (n, 144) Q4_K blocks: fp16 d, fp16 dmin, 12 bytes of 6-bit scales
    and mins, 128 bytes of 4-bit quants."""
    header, q = encode_k_sub_blocks(blocks, 15)
    return np.concatenate([header, nibbles(q)], axis=1)


def encode_q5_k(blocks):
    """(n, 256) float32 -> (n, 176) Q5_K blocks: Q4_K's header, qh[32] (bit j of qh[l] is the
    fifth bit of sub-block j's quant l), then the low 4 bits as Q4_K's nibbles."""
    header, q = encode_k_sub_blocks(blocks, 31)
    fifth = (q >> 4).astype(np.uint8)  # (n, 8, 32)
    qh = np.zeros((q.shape[0], 32), np.uint8)
    for j in range(8):
        qh |= fifth[:, j] << j
    return np.concatenate([header, qh, nibbles(q)], axis=1)


def encode_q6_k(blocks):
    """(n, 256) float32 -> (n, 210) Q6_K blocks: ql[128] (low 4 bits of the quants), qh[64]
    (high 2 bits), int8 scales[16], fp16 d. Sub-block k (16 weights) decodes as
    d * scales[k] * (q - 32)."""
    d16, sc, q = signed_sub_blocks(blocks, 32, 8)
    # Per 128-weight half h and l < 32, quarter k holds weights 32k + l: ql[64h + l] has quarters
    # 0 (low nibble) and 2 (high), ql[64h + 32 + l] quarters 1 and 3, qh[32h + l] the high bits
    # of quarter k at bits 2k.
    q = q.reshape(-1, 2, 4, 32)
    low = q & 0xF
    ql = (low[:, :, :2] | low[:, :, 2:] << 4).reshape(-1, 128)
    high = q >> 4
    qh = (high[:, :, 0] | high[:, :, 1] << 2 | high[:, :, 2] << 4 | high[:, :, 3] << 6)
    return np.concatenate([ql, qh.reshape(-1, 64), sc.astype(np.int8).view(np.uint8),
                           half_bytes(d16)], axis=1)


def two_bit_planes(q):
    """(n, 16, 16) quants in [0, 3] of sub-blocks 0-15 -> (n, 64) bytes, Q2_K's and Q3_K's
    layout: sub-block k = 8 h + 2 j + s (half h, j < 4, s < 2) keeps quant l in bits 2j-2j+1 of
    byte 32 h + 16 s + l."""
    q = q.reshape(-1, 2, 4, 2, 16)  # [n, h, j, s, l]
    planes = np.zeros((q.shape[0], 2, 2, 16), np.uint8)
    for j in range(4):
        planes |= q[:, :, j] << (2 * j)
    return planes.reshape(-1, 64)


def encode_q2_k(blocks):
    """(n, 256) float32 -> (n, 84) Q2_K blocks: scales[16] (sub-block k's 4-bit scale in the low
    nibble, its 4-bit minimum in the high), qs[64] (two_bit_planes), fp16 d, fp16 dmin.
    Sub-block k (16 weights) decodes as d * sc[k] * q - dmin * m[k], q in [0, 3]."""
    d16, dmin16, sc, m, q = min_max_sub_blocks(blocks, 16, 3, 15)
    return np.concatenate([sc | m << 4, two_bit_planes(q), half_bytes(d16), half_bytes(dmin16)],
                          axis=1)


def pack_q3_k_scales(s):
    """(n, 16) 6-bit scales -> (n, 12) bytes: byte b < 4 holds the low 4 bits of s[b] (low
    nibble) and s[8 + b] (high), byte 4 + b those of s[4 + b] and s[12 + b], byte 8 + b the top
    2 bits of s[b], s[4 + b], s[8 + b], s[12 + b] at bits 0, 2, 4, 6."""
    lo, hi = s & 0xF, s >> 4
    return np.concatenate([lo[:, 0:4] | lo[:, 8:12] << 4,
                           lo[:, 4:8] | lo[:, 12:16] << 4,
                           hi[:, 0:4] | hi[:, 4:8] << 2 | hi[:, 8:12] << 4 | hi[:, 12:16] << 6],
                          axis=1)


def encode_q3_k(blocks):
    """(n, 256) float32 -> (n, 110) Q3_K blocks: hmask[32] (the third bit of sub-block
    k = 8 h + 2 j + s's quant l in bit 4 h + j of byte 16 s + l), qs[64] (the low 2 bits,
    two_bit_planes), scales[12] (6-bit, pack_q3_k_scales), fp16 d. Sub-block k decodes as
    d * (sc[k] - 32) * (q - 4), q in [0, 7]."""
    d16, sc, q = signed_sub_blocks(blocks, 4, 6)
    third = (q >> 2).reshape(-1, 2, 4, 2, 16)  # [n, h, j, s, l]
    hmask = np.zeros((q.shape[0], 2, 16), np.uint8)
    for h in range(2):
        for j in range(4):
            hmask |= third[:, h, j] << (4 * h + j)
    return np.concatenate([hmask.reshape(-1, 32), two_bit_planes(q & 3),
                           pack_q3_k_scales((sc + 32).astype(np.uint8)), half_bytes(d16)], axis=1)


def iq4_quants(x, step):
    """Indices of the KVALUES_IQ4NL entries nearest to x / step (ties to the lower; a step of 0
    gives index 8, the value 1), packed as IQ4_NL's and IQ4_XS's 32-weight groups: (..., 32) ->
    (..., 16) bytes, byte j holding weight j's index in the low nibble, weight 16 + j's in the
    high."""
    midpoints = (KVALUES_IQ4NL[1:] + KVALUES_IQ4NL[:-1]) / 2
    q = np.searchsorted(midpoints, divide(x, step)).astype(np.uint8)
    return q[..., :16] | q[..., 16:] << 4


def iq4_scales(x):
    """(..., 32) float32 -> the scales (...) that map each group's largest |w| to kvalue -127."""
    extreme = np.take_along_axis(x, np.abs(x).argmax(axis=-1)[..., None], axis=-1)[..., 0]
    return extreme / KVALUES_IQ4NL[0]


def encode_iq4_nl(blocks):
    """(n, 32) float32 -> (n, 18) IQ4_NL blocks: fp16 d, 16 bytes of 4-bit quants (iq4_quants).
    Weight j decodes as d * kvalues_iq4nl[q]."""
    d16, d = fp16(iq4_scales(blocks))
    return np.concatenate([half_bytes(d16), iq4_quants(blocks, d[:, None])], axis=1)


def encode_iq4_xs(blocks):
    """(n, 256) float32 -> (n, 136) IQ4_XS blocks: fp16 d, uint16 scales_h (the top 2 bits of
    sub-block ib's 6-bit scale ls at bits 2 ib), scales_l[4] (the low 4 bits of ls of sub-blocks
    2 b (low nibble) and 2 b + 1 (high) in byte b), qs[128] (sub-block ib's 16 bytes of quants at
    16 ib, iq4_quants). Sub-block ib (32 weights) decodes as d * (ls - 32) * kvalues_iq4nl[q]."""
    x = blocks.reshape(-1, 8, 32)
    scale = iq4_scales(x)
    d16, d = fp16(np.abs(scale).max(axis=1) / 31)
    sc = np.clip(np.rint(divide(scale, d[:, None])), -32, 31).astype(np.int32)
    qs = iq4_quants(x, (d[:, None] * sc)[:, :, None]).reshape(-1, 128)
    ls = (sc + 32).astype(np.uint16)
    scales_h = np.zeros(ls.shape[0], np.uint16)
    for ib in range(8):
        scales_h |= (ls[:, ib] >> 4) << (2 * ib)
    scales_l = ((ls[:, 0::2] & 0xF) | (ls[:, 1::2] & 0xF) << 4).astype(np.uint8)
    return np.concatenate([half_bytes(d16), scales_h.astype("<u2").reshape(-1, 1).view(np.uint8),
                           scales_l, qs], axis=1)


ENCODERS = {QType.Q4_K: encode_q4_k, QType.Q5_K: encode_q5_k, QType.Q6_K: encode_q6_k,
            QType.Q2_K: encode_q2_k, QType.Q3_K: encode_q3_k, QType.IQ4_NL: encode_iq4_nl,
            QType.IQ4_XS: encode_iq4_xs}


def requantize(tensor, qtype):
    """(raw bytes with one row per weight row, weights) of `tensor` re-quantized to qtype."""
    weights = dequantize(tensor.data, tensor.tensor_type)
    rows, cols = weights.shape
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    if cols % block:
        sys.exit("%s: rows of %d weights are not a multiple of %d" % (tensor.name, cols, block))
    if qtype in ENCODERS:
        raw = ENCODERS[qtype](weights.reshape(-1, block).astype(np.float32))
    else:
        raw = quantize(weights.astype(np.float32), qtype)
    return raw.reshape(rows, -1), weights


def check_round_trip(name, qtype, raw, weights):
    """Prints the dequantization error of raw relative to the weights' RMS; fails if gross."""
    diff = dequantize(raw, qtype) - weights
    rms = np.sqrt(np.mean(weights.astype(np.float64) ** 2))
    rel_rms = np.sqrt(np.mean(diff.astype(np.float64) ** 2)) / rms
    rel_max = np.abs(diff).max() / rms
    print("  %-22s %s  rms error %.2f%%  max abs error %.1f%% of weight rms"
          % (name, qtype.name, 100 * rel_rms, 100 * rel_max), flush=True)
    if not rel_rms <= MAX_RMS_ERROR[qtype]:
        sys.exit("%s: %s round trip rms error %.3g > %g: the encoding is wrong"
                 % (name, qtype.name, rel_rms, MAX_RMS_ERROR[qtype]))


def copy_metadata(reader, writer):
    """Every key/value of reader with its type; GGUF.* are the header, not keys, and
    general.architecture was written by the writer's constructor."""
    writer.data_alignment = reader.alignment
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == gguf.Keys.General.ARCHITECTURE:
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub_type)


def write(reader, path, mode):
    """Writes the output; returns {name: (type, raw bytes)} of the re-quantized tensors."""
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(path, arch)
    copy_metadata(reader, writer)
    changed = {}
    for tensor in reader.tensors:
        qtype = target_type(tensor.name, mode)
        if qtype is None:
            writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
            continue
        raw, weights = requantize(tensor, qtype)
        check_round_trip(tensor.name, qtype, raw, weights)
        writer.add_tensor(tensor.name, raw, raw_dtype=qtype)
        changed[tensor.name] = (qtype, raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return changed


def verify(reader, path, changed):
    """Reads the output back: the same fields and tensors as the input, except `changed`."""
    out = gguf.GGUFReader(path)
    if out.alignment != reader.alignment or list(out.fields) != list(reader.fields):
        sys.exit("%s: alignment or metadata keys differ from the input" % path)
    for name, field in reader.fields.items():
        if out.fields[name].types != field.types or out.fields[name].contents() != field.contents():
            sys.exit("%s: metadata %s differs from the input" % (path, name))
    if [t.name for t in out.tensors] != [t.name for t in reader.tensors]:
        sys.exit("%s: tensor names or order differ from the input" % path)
    for old, new in zip(reader.tensors, out.tensors):
        qtype, data = changed.get(old.name, (old.tensor_type, old.data))
        if new.tensor_type != qtype or list(new.shape) != list(old.shape):
            sys.exit("%s: tensor %s is %s %s, expected %s %s" % (
                path, old.name, new.tensor_type.name, list(new.shape), qtype.name, list(old.shape)))
        if new.data.tobytes() != data.tobytes():
            sys.exit("%s: tensor %s: data differs from what was written" % (path, old.name))


def main():
    args = sys.argv[1:]
    mode = args[0] if args[:1] in (["--q5"], ["--low-bits"], ["--iq4"]) else None
    if mode:
        args = args[1:]
    q5 = mode == "--q5"
    if len(args) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    src, dst = args
    start = time.time()
    reader = gguf.GGUFReader(src)
    ffn_down = {"--q5": "block % 3: Q4_K, Q5_K, Q6_K", "--low-bits": "even blocks Q2_K, odd Q3_K",
                "--iq4": "IQ4_XS", None: "even blocks Q4_K, odd Q6_K"}[mode]
    print("make_kquant_model: %s: %d tensors, re-quantizing blk.*.ffn_down.weight (%s)"
          % (src, len(reader.tensors), ffn_down), flush=True)
    if q5:
        print("make_kquant_model: and blk.*.{%s}.weight (even blocks Q5_0, odd Q5_1; attn_v of"
              " blocks 1, 5, 9, ... Q8_0)" % ",".join(Q5_KINDS), flush=True)
    if mode == "--iq4":
        print("make_kquant_model: and blk.*.{%s}.weight (IQ4_NL)" % ",".join(Q5_KINDS), flush=True)
    changed = write(reader, dst, mode)
    verify(reader, dst, changed)
    print("make_kquant_model: wrote %s (%d tensors re-quantized, the rest identical) in %.1f s"
          % (dst, len(changed), time.time() - start), flush=True)


if __name__ == "__main__":
    main()

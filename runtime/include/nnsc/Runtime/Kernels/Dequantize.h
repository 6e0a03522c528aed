//===- Dequantize.h - ggml block formats to fp32 ----------------*- C++ -*-===//
//
// Decoders of the ggml weight formats the loader accepts, on raw pointers (no torch) so they
// can be unit-tested against hand-built blocks. Layouts follow ggml-common.h: every 32-weight
// block starts with an fp16 scale `d` (Q4_1 and Q5_1 also an fp16 minimum `m`) followed by the
// quants (Q5_0/Q5_1: their fifth bits, then the low nibbles); the K-quants' 256-weight
// super-blocks are described at unpackQ2_K, unpackQ3_K, unpackQ4_K, unpackQ5_K and unpackQ6_K,
// IQ4_XS's at unpackIQ4_XS.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_DEQUANTIZE_H
#define NNSC_RUNTIME_KERNELS_DEQUANTIZE_H

#include "nnsc/Runtime/Kernels/QuantGemv.h"

#include <cstdint>
#include <cstring>

namespace nnsc::kernels {

/// Elements per block of the Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL formats.
constexpr int64_t kQuantBlock = 32;

/// Elements per super-block of the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and of IQ4_XS.
constexpr int64_t kKQuantBlock = 256;

/// IEEE half and bfloat16 bit patterns to float.
float halfToFloat(uint16_t bits);
float bf16ToFloat(uint16_t bits);

/// out[i] = value of element i, for `count` elements. For the block formats `count` must be
/// a multiple of kQuantBlock. `src` may be unaligned.
void dequantizeF16(const uint8_t *src, float *out, int64_t count);
void dequantizeBF16(const uint8_t *src, float *out, int64_t count);
/// Q8_0: 34-byte blocks {fp16 d; int8 q[32]}, x = d * q.
void dequantizeQ8_0(const uint8_t *src, float *out, int64_t count);
/// Q4_0: 18-byte blocks {fp16 d; uint8 qs[16]}, x[j] = d * ((qs[j] & 15) - 8) and
/// x[j + 16] = d * ((qs[j] >> 4) - 8).
void dequantizeQ4_0(const uint8_t *src, float *out, int64_t count);
/// Q4_1: 20-byte blocks {fp16 d; fp16 m; uint8 qs[16]}, x[j] = d * (qs[j] & 15) + m and
/// x[j + 16] = d * (qs[j] >> 4) + m.
void dequantizeQ4_1(const uint8_t *src, float *out, int64_t count);
/// Q5_0: 22-byte blocks {fp16 d; uint32 qh; uint8 qs[16]}: quant j is (qs[j] & 15) plus bit j of
/// qh times 16, quant j + 16 is (qs[j] >> 4) plus bit j + 16 of qh times 16; x = d * (q - 16).
void dequantizeQ5_0(const uint8_t *src, float *out, int64_t count);
/// Q5_1: 24-byte blocks {fp16 d; fp16 m; uint32 qh; uint8 qs[16]}, quants as in Q5_0,
/// x = d * q + m.
void dequantizeQ5_1(const uint8_t *src, float *out, int64_t count);

/// ggml's non-linear 4-bit codebook (kvalues_iq4nl): IQ4_NL's and IQ4_XS's quants index it.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
/// IQ4_NL: 18-byte blocks {fp16 d; uint8 qs[16]} laid out as Q4_0's, x[j] = d *
/// kIQ4NLValues[qs[j] & 15] and x[j + 16] = d * kIQ4NLValues[qs[j] >> 4].
void dequantizeIQ4_NL(const uint8_t *src, float *out, int64_t count);

/// The 6-bit scales and minimums of a Q4_K super-block's 8 sub-blocks from its 12 packed bytes,
/// as ggml's get_scale_min_k4 reads them: sub-blocks 0-3 in the low 6 bits of bytes 0-3
/// (scales) and 4-7 (minimums); 4-7 in the nibbles of bytes 8-11, their top 2 bits in the top
/// bits of bytes 0-7. Writes the 8 scales, then the 8 minimums. Four 32-bit words at a time,
/// as llama.cpp's dot products unpack them.
inline void q4KScalesMins(const uint8_t *packed, uint8_t (&scalesThenMinimums)[16]) {
  uint32_t w[3];
  std::memcpy(w, packed, sizeof w);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  const uint32_t out[4] = {w[0] & low6, (w[2] & low4) | (((w[0] >> 6) & low2) << 4), w[1] & low6,
                           ((w[2] >> 4) & low4) | (((w[1] >> 6) & low2) << 4)};
  std::memcpy(scalesThenMinimums, out, sizeof out);
}

/// Q4_K: 144-byte super-blocks {fp16 d; fp16 dmin; uint8 scales[12]; uint8 qs[128]} of 8
/// sub-blocks of 32 weights. Sub-block j has a 6-bit scale sc[j] and a 6-bit minimum m[j],
/// packed in `scales` (q4KScalesMins), and its weight i is
/// (d * sc[j]) * q - dmin * m[j] with q in [0, 15]: for each 64 weights 2g..2g+1, byte l of
/// the 32 bytes qs[32 g ..] holds sub-block 2g's quant l (low nibble) and 2g+1's (high).
/// Writes the 256 quants to `q`, and per sub-block scales[j] = d * sc[j] and
/// minimums[j] = dmin * m[j] (both exact in fp32) to 8 floats each.
void unpackQ4_K(const uint8_t *block, int8_t *q, float *scales, float *minimums);
/// Q5_K: 176-byte super-blocks {fp16 d; fp16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]}:
/// Q4_K's scales, minimums and nibbles, and a fifth bit per weight: weight l of sub-block j
/// (l < 32) adds 16 to its quant where bit j of qh[l] is set. Writes the 256 quants (0-31) and
/// the sub-blocks' scales and minimums as unpackQ4_K does.
void unpackQ5_K(const uint8_t *block, int8_t *q, float *scales, float *minimums);
/// Q6_K: 210-byte super-blocks {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; fp16 d}. Weight
/// i is (d * scales[i / 16]) * (q - 32) with the 6-bit q made of a nibble of ql and two bits
/// of qh (for each 128 weights h: weights l, l + 32, l + 64, l + 96 (l < 32) take the low
/// nibble of ql[64 h + l], of ql[64 h + l + 32], the high nibble of the same two bytes, and
/// bits 0-1, 2-3, 4-5, 6-7 of qh[32 h + l]). Writes the 256 values q - 32 to `q` and the 16
/// scales d * scales[k] (exact in fp32) to `scales`.
void unpackQ6_K(const uint8_t *block, int8_t *q, float *scales);
/// The K-quants as fp32: x = scale * q - minimum (Q4_K, Q5_K), x = scale * q (Q6_K), with the
/// scales of unpackQ4_K/unpackQ5_K/unpackQ6_K; `count` must be a multiple of kKQuantBlock.
void dequantizeQ4_K(const uint8_t *src, float *out, int64_t count);
void dequantizeQ5_K(const uint8_t *src, float *out, int64_t count);
void dequantizeQ6_K(const uint8_t *src, float *out, int64_t count);

/// Q2_K: 84-byte super-blocks {uint8 scales[16]; uint8 qs[64]; fp16 d; fp16 dmin} of 16
/// sub-blocks of 16. Weight 128 h + 32 j + 16 s + l (half h, j < 4, s < 2, l < 16) is bits
/// 2j-2j+1 of qs[32 h + 16 s + l], q in [0, 3], in sub-block k = 8 h + 2 j + s. Writes the 256
/// quants to `q`, and per sub-block the scale d * (scales[k] & 15) and the minimum
/// dmin * (scales[k] >> 4) (exact in fp32).
void unpackQ2_K(const uint8_t *block, int8_t *q, float *scales, float *minimums);
/// Q3_K: 110-byte super-blocks {uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; fp16 d} of 16
/// sub-blocks of 16. Weight 128 h + 32 j + 16 s + l has its low 2 bits where Q2_K's are and its
/// third bit in bit 4 h + j of hmask[16 s + l]: q = low + 4 * bit - 4 in [-4, 3]. Sub-block k's
/// 6-bit scale sc: low 4 bits in scales[k % 8] (k < 8: low nibble, else high), high 2 bits in
/// bits 2 (k / 4) of scales[8 + k % 4]. Writes the quants q and the 16 scales d * (sc - 32).
void unpackQ3_K(const uint8_t *block, int8_t *q, float *scales);
/// x = scale * q - minimum (Q2_K), x = scale * q (Q3_K), as unpackQ2_K / unpackQ3_K give them;
/// `count` must be a multiple of kKQuantBlock.
void dequantizeQ2_K(const uint8_t *src, float *out, int64_t count);
void dequantizeQ3_K(const uint8_t *src, float *out, int64_t count);

/// IQ4_XS: 136-byte super-blocks {fp16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]}
/// of 8 sub-blocks of 32. Sub-block j's 6-bit scale ls: low 4 bits in scales_l[j / 2] (even j:
/// low nibble), high 2 bits in bits 2j-2j+1 of scales_h; its weights l and l + 16 (l < 16) are
/// the low and high nibble of qs[16 j + l] (as IQ4_NL's block), indices into kIQ4NLValues.
/// Writes the 256 codebook values to `q` and 16 scales d * (ls - 32) (exact in fp32), one per
/// 16 weights (each sub-block's twice), as the formats of 16-weight sub-blocks do.
void unpackIQ4_XS(const uint8_t *block, int8_t *q, float *scales);
/// x = scale * q with unpackIQ4_XS's values; `count` must be a multiple of kKQuantBlock.
void dequantizeIQ4_XS(const uint8_t *src, float *out, int64_t count);

/// The decoder above of the block format `format`.
void dequantize(QuantFormat format, const uint8_t *src, float *out, int64_t count);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_DEQUANTIZE_H

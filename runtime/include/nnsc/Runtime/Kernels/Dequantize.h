//===- Dequantize.h - ggml block formats to fp32 ----------------*- C++ -*-===//
//
// Decoders of the ggml weight formats the loader accepts, on raw pointers (no torch) so they
// can be unit-tested against hand-built blocks. Layouts follow ggml-common.h: every block
// starts with an fp16 scale `d` (Q4_1 also an fp16 minimum `m`) followed by the quants.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_DEQUANTIZE_H
#define NNSC_RUNTIME_KERNELS_DEQUANTIZE_H

#include <cstdint>

namespace nnsc::kernels {

/// Elements per block of the Q8_0, Q4_0 and Q4_1 formats.
constexpr int64_t kQuantBlock = 32;

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

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_DEQUANTIZE_H

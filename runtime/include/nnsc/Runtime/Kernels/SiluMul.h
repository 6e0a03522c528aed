//===- SiluMul.h - SiLU(gate) * up in one pass ------------------*- C++ -*-===//
//
// The Llama MLP multiplies SiLU of the gate projection by the up projection. LibTorch does
// it as at::silu (one pass, a new tensor) and mul_ (a second pass), both memory-bound on a
// [tokens, intermediate] matrix. These kernels read gate and up once and write the product
// once. SiLU is computed as LibTorch's vectorized CPU kernel computes it, x / (1 + exp(-x))
// with SLEEF's 1-ulp expf algorithm (Cody-Waite reduction, degree-6 polynomial, FMAs), so
// fp32 results equal at::silu(g) * u bit for bit where LibTorch runs its vector loop (its
// scalar tail, the last n mod 32 elements of a row, calls the C library's expf and can
// differ by a few ulps); bf16 rounds SiLU to bf16 before the product and the product again,
// as the two LibTorch ops do.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_SILUMUL_H
#define NNSC_RUNTIME_KERNELS_SILUMUL_H

#include <cstdint>

namespace nnsc::kernels {

/// out[i] = silu(gate[i]) * up[i] for i in [0, n), fp32. `out` may alias `gate` or `up`.
void siluMulF32(const float *gate, const float *up, float *out, int64_t n);

/// The same on bf16 bits: out = bf16(bf16(silu(gate)) * up), rounding to nearest even.
void siluMulBF16(const uint16_t *gate, const uint16_t *up, uint16_t *out, int64_t n);

/// Whether siluMulF32/siluMulBF16 run their AVX-512 code on this CPU; otherwise they run
/// the portable loops below.
bool siluMulVectorized();

/// Portable scalar loops with the same arithmetic and the same results as the AVX-512 code.
void siluMulF32Portable(const float *gate, const float *up, float *out, int64_t n);
void siluMulBF16Portable(const uint16_t *gate, const uint16_t *up, uint16_t *out, int64_t n);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_SILUMUL_H

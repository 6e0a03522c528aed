//===- QuantGemvAvx512Isa.h - The AVX-512 vector type of the quantized GEMV -*- C++ -*-===//
//
// Private to runtime/kernels/cpu, for the files compiled for AVX-512 F/BW/VL only
// (QuantGemvAvx512.cpp, QuantGemvAvx512Bf16.cpp): the `Isa` that QuantGemvKernel.h's kernel
// body is instantiated with, whose loads and widenings the vdpbf16ps kernel uses too. Internal
// linkage, as QuantGemvKernel.h explains.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVAVX512ISA_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVAVX512ISA_H

#include "QuantGemvKernel.h"

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

struct Avx512 {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int SingleRowBlock = 4;
  static constexpr int RowBlock = 2;
  static constexpr int BatchBlock = 4;

  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V load(const float *p) { return _mm512_loadu_ps(p); }
  static V load(const uint16_t *p) {
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static float reduce(V v) { return _mm512_reduce_add_ps(v); }
  /// The 16 bytes at `qs` widened to 32-bit lanes: their low nibbles as `lo`, high as `hi`.
  static void q4(const uint8_t *qs, V &lo, V &hi) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qs)));
    lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0x0f)));
    hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
  }
  /// Adds 16 to the lanes of `lo` whose bit of `fifthBits` is set (bits 0-15), and to those of
  /// `hi` (bits 16-31): the fifth bits of Q5_0/Q5_1's quants. One part per block (p = 0).
  static void addFifthBits(uint32_t fifthBits, std::ptrdiff_t, V &lo, V &hi) {
    const V sixteen = set1(16.0f);
    lo = _mm512_mask_add_ps(lo, __mmask16(fifthBits), lo, sixteen);
    hi = _mm512_mask_add_ps(hi, __mmask16(fifthBits >> 16), hi, sixteen);
  }
  /// The n <= 16 fp16 values at `p` widened into out[0, n), zeros in out[n, 16) (a masked
  /// load: nothing past them is read, whatever `end`).
  static void widenHalves(const uint8_t *p, int n, const uint8_t *, float *out) {
    _mm512_store_ps(out, widenHalves(p, n));
  }
  static V widenHalves(const uint8_t *p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p));
  }
  /// The 16 int8 quants at `q`.
  static V q8(const int8_t *q) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q))));
  }
};

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVAVX512ISA_H

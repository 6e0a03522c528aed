//===- Bf16Avx512.h - 16-lane bf16 <-> fp32 conversions ---------*- C++ -*-===//
//
// Private to runtime/kernels/cpu: Bf16.h's conversions 16 lanes at a time, for the AVX-512
// kernels (SiluMul.cpp's, which enable AVX-512 per function, and the quantized GEMV's, whose
// files are compiled for it). Internal linkage, and the target attribute on each function, so
// that no copy of them is merged into, or runs in, code built for the baseline ISA.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_BF16AVX512_H
#define NNSC_RUNTIME_KERNELS_CPU_BF16AVX512_H

#include <immintrin.h>

namespace nnsc::kernels::bf16 {
namespace { // NOLINT: internal linkage, see above

/// The fp32 values of 16 bf16 bit patterns (exact), as widen().
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 widen16(__m256i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

/// 16 fp32 values rounded to bf16 as narrow() rounds them: to nearest even, a NaN stays a
/// quiet NaN.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m256i narrow16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb);
  r = _mm512_srli_epi32(r, 16);
  const __m512i nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), nan);
  return _mm512_cvtepi32_epi16(r);
}

} // namespace
} // namespace nnsc::kernels::bf16

#endif // NNSC_RUNTIME_KERNELS_CPU_BF16AVX512_H

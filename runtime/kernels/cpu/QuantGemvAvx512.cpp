//===- QuantGemvAvx512.cpp - The quantized GEMV on AVX-512 ------*- C++ -*-===//
//
// Compiled for AVX-512 F/BW/VL (see runtime/CMakeLists.txt); QuantGemv.cpp calls it only
// where the CPU has them. 16 fp32 lanes, 32 vector registers: 4 weight rows per block of
// accumulators for one activation row, 2 weight rows by 4 activation rows for several (4 by 4
// spills: 10-20% slower at 2-6 rows on a Zen 4, nnsc-bench-quant-gemv); a block's 32 weights
// are two vectors (low, high nibbles).
//
//===----------------------------------------------------------------------===//

#include "QuantGemvIsa.h"
#include "QuantGemvKernel.h"

namespace nnsc::kernels {

namespace {

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
  /// The n <= 16 fp16 values at `p` widened into out[0, n), zeros in out[n, 16) (a masked
  /// load: nothing past them is read, whatever `end`).
  static void widenHalves(const uint8_t *p, int n, const uint8_t *, float *out) {
    const __m256i h = _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p);
    _mm512_store_ps(out, _mm512_cvtph_ps(h));
  }
  /// The 16 int8 quants at `q`.
  static V q8(const int8_t *q) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q))));
  }
};

} // namespace

void quantGemvAvx512(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd) {
  quantGemvOn<Avx512>(a, rowBegin, rowEnd);
}

void quantGemvAvx512(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  quantGemvOn<Avx512>(a, rowBegin, rowEnd);
}

} // namespace nnsc::kernels

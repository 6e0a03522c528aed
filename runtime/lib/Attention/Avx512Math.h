//===- Avx512Math.h - Vector helpers of the AVX-512 attention ---*- C++ -*-===//
//
// Included only by the attention sources compiled with AVX-512 enabled. Everything is
// computed in float; bfloat16 (its bits, uint16_t) is widened on load and rounded to nearest
// even on store, as c10::BFloat16 rounds.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LIB_ATTENTION_AVX512MATH_H
#define NNSC_RUNTIME_LIB_ATTENTION_AVX512MATH_H

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nnsc::attention {

inline __m512 load16(const float *p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t *p) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

inline float toFloat(float v) { return v; }
inline float toFloat(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// `v` in the element type: bfloat16 rounds to nearest even and keeps NaNs quiet.
template <typename T> T fromFloat(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if (std::isnan(v))
      return uint16_t((bits >> 16) | 0x40);
    return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
}

/// exp(x) for x <= 0 within about 2 ulp (Cephes' expf: 2^n * p(r), r = x - n ln 2); inputs
/// below -104 (and -inf) give 0 through the scaling's underflow.
inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, n);
}

/// Lane j of the result is the sum of the lanes of v[j].
inline __m512 transposeSum16(const __m512 (&v)[16]) {
  __m512 w[8], u[4], z[2];
  for (int j = 0; j < 8; ++j) // per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3]
    w[j] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * j], v[2 * j + 1]),
                         _mm512_unpackhi_ps(v[2 * j], v[2 * j + 1]));
  for (int j = 0; j < 4; ++j) { // per 128-bit lane: the partial sums of keys 4j..4j+3
    __m512d a = _mm512_castps_pd(w[2 * j]), b = _mm512_castps_pd(w[2 * j + 1]);
    u[j] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  for (int j = 0; j < 2; ++j) // 128-bit lanes [x0+x2, x1+x3, y0+y2, y1+y3]
    z[j] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * j], u[2 * j + 1], 0x44),
                         _mm512_shuffle_f32x4(u[2 * j], u[2 * j + 1], 0xee));
  return _mm512_add_ps(_mm512_shuffle_f32x4(z[0], z[1], 0x88),
                       _mm512_shuffle_f32x4(z[0], z[1], 0xdd));
}

} // namespace nnsc::attention

#endif // NNSC_RUNTIME_LIB_ATTENTION_AVX512MATH_H

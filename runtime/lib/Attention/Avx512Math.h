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

#include <cstdint>

namespace nnsc::attention {

inline __m512 load16(const float *p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t *p) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

/// Stores 16 floats as T: bfloat16 rounds to nearest even and keeps NaNs quiet.
inline void store16(float *p, __m512 v) { _mm512_storeu_ps(p, v); }
inline void store16(uint16_t *p, __m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(bits, 16);
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(high, _mm512_set1_epi32(1)));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, bias), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), _mm512_cvtepi32_epi16(rounded));
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

/// out[j] lane i = in[i] lane j: a 16x16 transpose in registers (a scalar or gather/scatter
/// transpose costs several times more than the FMAs it feeds for short sequences).
inline void transpose16(const __m512 (&in)[16], __m512 (&out)[16]) {
  __m512 t[16], r[16];
  for (int i = 0; i < 8; ++i) { // per 128-bit lane: [a0 b0 a1 b1], [a2 b2 a3 b3]
    t[2 * i] = _mm512_unpacklo_ps(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) { // r[4i + k], 128-bit lane L: column 4L + k of rows 4i..4i+3
    for (int k = 0; k < 2; ++k) {
      const __m512d lo = _mm512_castps_pd(t[4 * i + k]), hi = _mm512_castps_pd(t[4 * i + 2 + k]);
      r[4 * i + 2 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
      r[4 * i + 2 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
    }
  }
  for (int k = 0; k < 4; ++k) { // a 4x4 transpose of 128-bit lanes
    const __m512 u0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x44);
    const __m512 u1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xee);
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x44);
    const __m512 u3 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xee);
    out[k] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    out[4 + k] = _mm512_shuffle_f32x4(u0, u2, 0xdd);
    out[8 + k] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    out[12 + k] = _mm512_shuffle_f32x4(u1, u3, 0xdd);
  }
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

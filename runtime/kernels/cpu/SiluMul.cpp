//===- SiluMul.cpp - SiLU(gate) * up in one pass ----------------*- C++ -*-===//
//
// The library is compiled for x86-64-v3; the AVX-512 loops carry their own target attribute
// and run only when the CPU reports AVX-512 F and BW (checked once).
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/SiluMul.h"

#include "Bf16.h"
#include "Bf16Avx512.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace nnsc::kernels {

namespace {

// SLEEF's xexpf (the 1-ulp fp32 exp behind LibTorch's Vectorized<float>::exp): q = rint(x /
// ln 2), s = x - q ln 2 in two FMA steps, exp(s) by a degree-6 polynomial, scaled by 2^q in
// two halves so that q up to 2 x 127 does not overflow the exponent field.
constexpr float InvLn2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;
constexpr float Ln2Hi = 0.693145751953125f;
constexpr float Ln2Lo = 1.428606765330187045e-06f;
constexpr float Poly[] = {0.000198527617612853646278381f, 0.00139304355252534151077271f,
                          0.00833336077630519866943359f,  0.0416664853692054748535156f,
                          0.166666671633720397949219f,    0.5f};
constexpr float UnderflowBelow = -104.0f, OverflowAbove = 100.0f;

float pow2i(int32_t q) {
  const uint32_t bits = uint32_t(q + 0x7f) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float expScalar(float d) {
  const float qf = std::nearbyint(d * InvLn2);
  // Out-of-range (and NaN) inputs are fixed up below; keep the conversion defined.
  const int32_t q = std::isfinite(qf) && std::fabs(qf) < 1e9f ? int32_t(qf) : 0;
  float s = std::fma(float(q), -Ln2Hi, d);
  s = std::fma(float(q), -Ln2Lo, s);
  float u = Poly[0];
  for (int i = 1; i < 6; ++i)
    u = std::fma(u, s, Poly[i]);
  u = 1.0f + std::fma(s * s, u, s);
  u = u * pow2i(q >> 1) * pow2i(q - (q >> 1));
  if (d < UnderflowBelow)
    u = 0.0f;
  if (OverflowAbove < d)
    u = INFINITY;
  return std::isnan(d) ? d : u;
}

float siluScalar(float x) { return x / (1.0f + expScalar(-x)); }

using bf16::narrow;
using bf16::widen;

#define NNSC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

NNSC_AVX512 __m512 exp16(__m512 d) {
  const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(d, _mm512_set1_ps(InvLn2)));
  const __m512 qf = _mm512_cvtepi32_ps(q);
  __m512 s = _mm512_fmadd_ps(qf, _mm512_set1_ps(-Ln2Hi), d);
  s = _mm512_fmadd_ps(qf, _mm512_set1_ps(-Ln2Lo), s);
  __m512 u = _mm512_set1_ps(Poly[0]);
  for (int i = 1; i < 6; ++i)
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(Poly[i]));
  u = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s));
  const __m512i bias = _mm512_set1_epi32(0x7f);
  const __m512i half = _mm512_srai_epi32(q, 1);
  const __m512i rest = _mm512_sub_epi32(q, half);
  u = _mm512_mul_ps(u, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, bias), 23)));
  u = _mm512_mul_ps(u, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(rest, bias), 23)));
  u = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d, _mm512_set1_ps(UnderflowBelow), _CMP_NLT_UQ), u);
  return _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(_mm512_set1_ps(OverflowAbove), d, _CMP_LT_OQ),
                            _mm512_set1_ps(INFINITY));
}

NNSC_AVX512 __m512 silu16(__m512 x) {
  const __m512 e = exp16(_mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int32_t(0x80000000u)))));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

using bf16::narrow16;
using bf16::widen16;

NNSC_AVX512 void siluMulF32Avx512(const float *gate, const float *up, float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i,
                     _mm512_mul_ps(silu16(_mm512_loadu_ps(gate + i)), _mm512_loadu_ps(up + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_mul_ps(silu16(_mm512_maskz_loadu_ps(m, gate + i)),
                                        _mm512_maskz_loadu_ps(m, up + i)));
  }
}

NNSC_AVX512 __m256i siluMulBF16x16(__m256i g, __m256i u) {
  const __m512 a = widen16(narrow16(silu16(widen16(g))));
  return narrow16(_mm512_mul_ps(a, widen16(u)));
}

NNSC_AVX512 void siluMulBF16Avx512(const uint16_t *gate, const uint16_t *up, uint16_t *out,
                                   int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i g = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(gate + i));
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(up + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), siluMulBF16x16(g, u));
  }
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    const __m256i g = _mm256_maskz_loadu_epi16(m, gate + i);
    const __m256i u = _mm256_maskz_loadu_epi16(m, up + i);
    _mm256_mask_storeu_epi16(out + i, m, siluMulBF16x16(g, u));
  }
}

bool avx512() {
  static const bool supported = __builtin_cpu_supports("avx512f") &&
                                __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl");
  return supported;
}

} // namespace

bool siluMulVectorized() { return avx512(); }

void siluMulF32Portable(const float *gate, const float *up, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = siluScalar(gate[i]) * up[i];
}

void siluMulBF16Portable(const uint16_t *gate, const uint16_t *up, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = narrow(widen(narrow(siluScalar(widen(gate[i])))) * widen(up[i]));
}

void siluMulF32(const float *gate, const float *up, float *out, int64_t n) {
  if (avx512())
    siluMulF32Avx512(gate, up, out, n);
  else
    siluMulF32Portable(gate, up, out, n);
}

void siluMulBF16(const uint16_t *gate, const uint16_t *up, uint16_t *out, int64_t n) {
  if (avx512())
    siluMulBF16Avx512(gate, up, out, n);
  else
    siluMulBF16Portable(gate, up, out, n);
}

} // namespace nnsc::kernels

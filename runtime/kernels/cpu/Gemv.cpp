//===- Gemv.cpp - Weight-streaming matrix-vector kernels --------*- C++ -*-===//
//
// Compiled for AVX-512 (see runtime/CMakeLists.txt); callers check gemvSupported() first.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/Gemv.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace nnsc::kernels {

namespace {

/// Weight rows per block: their accumulators, with BatchBlock activation rows, fill 16 of the
/// 32 vector registers, and a block of long rows still fits in L1 while the batch is swept.
constexpr int RowBlock = 4;
constexpr int BatchBlock = 4;

__m512 load16(const float *p) { return _mm512_loadu_ps(p); }
__m512 load16(const uint16_t *p) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
__m512 loadTail(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
__m512 loadTail(const uint16_t *p, __mmask16 m) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

float toFloat(float v) { return v; }
float toFloat(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
void store(float *p, float v) { *p = v; }
void store(uint16_t *p, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if (std::isnan(v))
    *p = uint16_t((bits >> 16) | 0x40); // keep the sign, force a quiet NaN
  else
    *p = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

/// Adds the bias, reduces the accumulators of rows [r, r + RB) x activation rows [b, b + BB)
/// and writes (or adds) them.
template <int RB, int BB, typename T>
void finish(const GemvArgs<T> &a, int64_t r, int64_t b, __m512 (&acc)[RB][BB]) {
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? toFloat(a.bias[r + i]) : 0.0f;
    for (int j = 0; j < BB; ++j) {
      T *out = a.y + (b + j) * a.yStride + r + i;
      float v = _mm512_reduce_add_ps(acc[i][j]) + bias;
      store(out, a.accumulate ? toFloat(*out) + v : v);
    }
  }
}

/// Rows [r, r + RB) of W against activation rows [b, b + BB), widened to fp32.
template <int RB, int BB, typename T> void widenBlock(const GemvArgs<T> &a, int64_t r, int64_t b) {
  __m512 acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = _mm512_setzero_ps();
  const T *w = a.w + r * a.cols;
  const T *x = a.x + b * a.xStride;
  const int64_t full = a.cols & ~int64_t(15);
  for (int64_t c = 0; c < full; c += 16) {
    __m512 xv[BB];
    for (int j = 0; j < BB; ++j)
      xv[j] = load16(x + j * a.xStride + c);
    for (int i = 0; i < RB; ++i) {
      __m512 wv = load16(w + i * a.cols + c);
      for (int j = 0; j < BB; ++j)
        acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  if (full < a.cols) {
    const __mmask16 m = __mmask16((1u << (a.cols - full)) - 1);
    __m512 xv[BB];
    for (int j = 0; j < BB; ++j)
      xv[j] = loadTail(x + j * a.xStride + full, m);
    for (int i = 0; i < RB; ++i) {
      __m512 wv = loadTail(w + i * a.cols + full, m);
      for (int j = 0; j < BB; ++j)
        acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  finish<RB, BB>(a, r, b, acc);
}

/// The same with vdpbf16ps: 32 bf16 weights per instruction, pairs of products summed into 16
/// fp32 lanes, no widening. Compiled for AVX512-BF16 only here; callers check
/// gemvBF16DotSupported().
template <int RB, int BB>
__attribute__((target("avx512bf16"))) void dotBlock(const GemvArgs<uint16_t> &a, int64_t r,
                                                    int64_t b) {
  __m512 acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = _mm512_setzero_ps();
  const uint16_t *w = a.w + r * a.cols;
  const uint16_t *x = a.x + b * a.xStride;
  const int64_t full = a.cols & ~int64_t(31);
  for (int64_t c = 0; c < full; c += 32) {
    __m512bh xv[BB];
    for (int j = 0; j < BB; ++j)
      xv[j] = (__m512bh)_mm512_loadu_si512(x + j * a.xStride + c);
    for (int i = 0; i < RB; ++i) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(w + i * a.cols + c);
      for (int j = 0; j < BB; ++j)
        acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
    }
  }
  if (full < a.cols) {
    // Masked-off lanes load zeros, whose products add nothing.
    const __mmask32 m = __mmask32((uint64_t(1) << (a.cols - full)) - 1);
    __m512bh xv[BB];
    for (int j = 0; j < BB; ++j)
      xv[j] = (__m512bh)_mm512_maskz_loadu_epi16(m, x + j * a.xStride + full);
    for (int i = 0; i < RB; ++i) {
      const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w + i * a.cols + full);
      for (int j = 0; j < BB; ++j)
        acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
    }
  }
  finish<RB, BB>(a, r, b, acc);
}

template <int RB, int BB, bool Dot, typename T>
void block(const GemvArgs<T> &a, int64_t r, int64_t b) {
  if constexpr (Dot)
    dotBlock<RB, BB>(a, r, b);
  else
    widenBlock<RB, BB>(a, r, b);
}

template <int RB, bool Dot, typename T> void rowBlock(const GemvArgs<T> &a, int64_t r) {
  int64_t b = 0;
  for (; b + BatchBlock <= a.batch; b += BatchBlock)
    block<RB, BatchBlock, Dot>(a, r, b);
  switch (a.batch - b) {
  case 3:
    block<RB, 3, Dot>(a, r, b);
    break;
  case 2:
    block<RB, 2, Dot>(a, r, b);
    break;
  case 1:
    block<RB, 1, Dot>(a, r, b);
    break;
  default:
    break;
  }
}

template <bool Dot, typename T> void gemv(const GemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  int64_t r = rowBegin;
  for (; r + RowBlock <= rowEnd; r += RowBlock)
    rowBlock<RowBlock, Dot>(a, r);
  for (; r < rowEnd; ++r)
    rowBlock<1, Dot>(a, r);
}

} // namespace

bool gemvSupported() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

bool gemvBF16DotSupported() { return gemvSupported() && __builtin_cpu_supports("avx512bf16"); }

void gemvF32(const GemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd) {
  gemv<false>(a, rowBegin, rowEnd);
}

void gemvBF16(const GemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  gemv<false>(a, rowBegin, rowEnd);
}

void gemvBF16Dot(const GemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  gemv<true>(a, rowBegin, rowEnd);
}

} // namespace nnsc::kernels

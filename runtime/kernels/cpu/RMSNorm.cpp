//===- RMSNorm.cpp - RMSNorm CPU kernel -------------------------*- C++ -*-===//

#include "nnsc/Runtime/Kernels/RMSNorm.h"

#include "Bf16.h"

#include <cmath>
#include <cstring>

namespace nnsc::kernels {

void rmsNormF32(const float *x, const float *weight, float *out, int64_t rows, int64_t cols,
                float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *outr = out + r * cols;
    // Accumulate in double: Hugging Face computes the variance in fp32 over at most a few
    // thousand features, and a double sum keeps us within fp32 rounding of it.
    double sumSq = 0.0;
#pragma omp simd reduction(+ : sumSq)
    for (int64_t c = 0; c < cols; ++c)
      sumSq += static_cast<double>(xr[c]) * xr[c];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sumSq / cols) + eps);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      outr[c] = weight[c] * (xr[c] * scale);
  }
}

using bf16::narrow;
using bf16::widen;

void rmsNormBF16(const uint16_t *x, const uint16_t *weight, uint16_t *out, int64_t rows,
                 int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *xr = x + r * cols;
    uint16_t *outr = out + r * cols;
    double sumSq = 0.0;
#pragma omp simd reduction(+ : sumSq)
    for (int64_t c = 0; c < cols; ++c) {
      const float v = widen(xr[c]);
      sumSq += static_cast<double>(v) * v;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(sumSq / cols) + eps);
    // transformers' order for half types: normalize in fp32, round to bf16, then scale by
    // the weight (a bf16 product, rounded again).
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      outr[c] = narrow(widen(weight[c]) * widen(narrow(widen(xr[c]) * scale)));
  }
}

} // namespace nnsc::kernels

//===- Gemv.h - Weight-streaming matrix-vector kernels ----------*- C++ -*-===//
//
// Decode multiplies a handful of activation rows by every weight matrix once per token, so
// its speed is the speed of streaming the weights from memory. These kernels read each weight
// row once for all activation rows (up to a few), accumulate in fp32 with AVX-512 and write
// each output once, optionally adding it to what is there (a fused residual add). bf16
// products either widen weights and activations to fp32 exactly (gemvBF16) or use the
// AVX512-BF16 dot product vdpbf16ps (gemvBF16Dot), as LibTorch's bf16 linear (oneDNN) does on
// such CPUs: exact products summed in fp32, denormal inputs read as zero. The output is
// rounded once, to nearest even.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_GEMV_H
#define NNSC_RUNTIME_KERNELS_GEMV_H

#include <cstdint>

namespace nnsc::kernels {

/// Whether this CPU runs the kernels below (AVX-512 F and BW).
bool gemvSupported();

/// Whether this CPU also runs gemvBF16Dot (AVX512-BF16).
bool gemvBF16DotSupported();

/// One product y = x W^T (+ bias) (+ y). Element types are fp32 (`float`) or bf16 bits
/// (`uint16_t`), the same for w, x, y and bias.
template <typename T> struct GemvArgs {
  const T *w = nullptr;    // [rows, cols], row-major, contiguous
  const T *x = nullptr;    // [batch, cols], rows xStride elements apart
  T *y = nullptr;          // [batch, rows], rows yStride elements apart
  const T *bias = nullptr; // [rows], or null
  int64_t rows = 0, cols = 0, batch = 0, xStride = 0, yStride = 0;
  /// y += x W^T instead of y = x W^T.
  bool accumulate = false;
};

/// Computes output columns [rowBegin, rowEnd) of `a` (rows of W).
void gemvF32(const GemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd);
void gemvBF16(const GemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);
void gemvBF16Dot(const GemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_GEMV_H

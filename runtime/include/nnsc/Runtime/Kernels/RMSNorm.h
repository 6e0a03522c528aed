//===- RMSNorm.h - RMSNorm kernels ------------------------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_KERNELS_RMSNORM_H
#define NNSC_RUNTIME_KERNELS_RMSNORM_H

#include <cstdint>

namespace nnsc::kernels {

/// out[r, :] = weight * x[r, :] / sqrt(mean(x[r, :]^2) + eps), the Llama RMSNorm.
/// x, out: [rows, cols] contiguous; weight: [cols]. out may alias x.
void rmsNormF32(const float *x, const float *weight, float *out, int64_t rows, int64_t cols,
                float eps);

/// The same on bf16 bits, in transformers' order for half types: the mean square and the
/// normalization in fp32, the normalized row rounded to bf16, then multiplied by the weight
/// and rounded again (to nearest even). One pass instead of LibTorch's seven ops per row.
void rmsNormBF16(const uint16_t *x, const uint16_t *weight, uint16_t *out, int64_t rows,
                 int64_t cols, float eps);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_RMSNORM_H

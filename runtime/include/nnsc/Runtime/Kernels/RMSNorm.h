//===- RMSNorm.h - RMSNorm kernels ------------------------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_KERNELS_RMSNORM_H
#define NNSC_RUNTIME_KERNELS_RMSNORM_H

#include <cstdint>

namespace nnsc::kernels {

/// out[r, :] = weight * x[r, :] / sqrt(mean(x[r, :]^2) + eps), the Llama RMSNorm.
/// x, out: [rows, cols] contiguous; weight: [cols]. out may alias x.
void rmsNormF32(const float *x, const float *weight, float *out, int64_t rows, int64_t cols,
                float eps);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_RMSNORM_H

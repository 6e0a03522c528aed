//===- RMSNormCuda.h - RMSNorm CUDA kernel ----------------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_KERNELS_RMSNORMCUDA_H
#define NNSC_RUNTIME_KERNELS_RMSNORMCUDA_H

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace nnsc::kernels {

/// Device-pointer version of rmsNormF32, launched on `stream`.
cudaError_t rmsNormF32Cuda(const float *x, const float *weight, float *out, int64_t rows,
                           int64_t cols, float eps, cudaStream_t stream);

/// bfloat16 rows as nnsc::rmsNorm computes them: weight * bf16(x * rsqrt(mean(x^2) + eps))
/// with the sum of squares in fp32.
cudaError_t rmsNormBF16Cuda(const __nv_bfloat16 *x, const __nv_bfloat16 *weight, __nv_bfloat16 *out,
                            int64_t rows, int64_t cols, float eps, cudaStream_t stream);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_RMSNORMCUDA_H

//===- RMSNormCuda.h - RMSNorm CUDA kernel ----------------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_KERNELS_RMSNORMCUDA_H
#define NNSC_RUNTIME_KERNELS_RMSNORMCUDA_H

#include <cstdint>
#include <cuda_runtime_api.h>

namespace nnsc::kernels {

/// Device-pointer version of rmsNormF32, launched on `stream`.
cudaError_t rmsNormF32Cuda(const float *x, const float *weight, float *out, int64_t rows,
                           int64_t cols, float eps, cudaStream_t stream);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_RMSNORMCUDA_H

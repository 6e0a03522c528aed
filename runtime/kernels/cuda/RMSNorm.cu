//===- RMSNorm.cu - RMSNorm CUDA kernel -------------------------*- CUDA -*-===//
//
// Same contract as the CPU kernel (nnsc/Runtime/Kernels/RMSNorm.h): one block per row, a
// block-wide reduction of the sum of squares, then the scaled write.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/RMSNormCuda.h"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void rmsNormKernel(const float *__restrict__ x, const float *__restrict__ weight,
                              float *__restrict__ out, int64_t cols, float eps) {
  const int64_t row = blockIdx.x;
  const float *xr = x + row * cols;
  float *outr = out + row * cols;

  float partial = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    partial += xr[c] * xr[c];
  // Warp reduction, then one value per warp through shared memory.
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    partial += __shfl_down_sync(0xffffffffu, partial, offset);
  __shared__ float warpSums[kThreads / 32];
  __shared__ float scale;
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  if (lane == 0)
    warpSums[warp] = partial;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kThreads / 32; ++w)
      total += warpSums[w];
    scale = rsqrtf(total / static_cast<float>(cols) + eps);
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    outr[c] = weight[c] * (xr[c] * scale);
}

} // namespace

cudaError_t rmsNormF32Cuda(const float *x, const float *weight, float *out, int64_t rows,
                           int64_t cols, float eps, cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  rmsNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, out, cols, eps);
  return cudaGetLastError();
}

} // namespace nnsc::kernels

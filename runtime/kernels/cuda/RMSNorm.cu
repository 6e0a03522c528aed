//===- RMSNorm.cu - RMSNorm CUDA kernel -------------------------*- CUDA -*-===//
//
// Same contract as the CPU kernel (nnsc/Runtime/Kernels/RMSNorm.h): one block per row, a
// block-wide reduction of the sum of squares, then the scaled write. bfloat16 rows follow
// transformers' order for half types: normalize in fp32, round, then scale by the weight.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/RMSNormCuda.h"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

constexpr int kThreads = 256;

__device__ inline float toFloat(float x) { return x; }
__device__ inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline void store(float *out, float normalized, float weight) {
  *out = weight * normalized;
}
__device__ inline void store(__nv_bfloat16 *out, float normalized, float weight) {
  *out = __float2bfloat16(weight * __bfloat162float(__float2bfloat16(normalized)));
}

template <typename T>
__global__ void rmsNormKernel(const T *__restrict__ x, const T *__restrict__ weight,
                              T *__restrict__ out, int64_t cols, float eps) {
  const int64_t row = blockIdx.x;
  const T *xr = x + row * cols;
  T *outr = out + row * cols;

  float partial = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    partial += toFloat(xr[c]) * toFloat(xr[c]);
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
    store(outr + c, toFloat(xr[c]) * scale, toFloat(weight[c]));
}

template <typename T>
cudaError_t launch(const T *x, const T *weight, T *out, int64_t rows, int64_t cols, float eps,
                   cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  rmsNormKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, out, cols, eps);
  return cudaGetLastError();
}

} // namespace

cudaError_t rmsNormF32Cuda(const float *x, const float *weight, float *out, int64_t rows,
                           int64_t cols, float eps, cudaStream_t stream) {
  return launch(x, weight, out, rows, cols, eps, stream);
}

cudaError_t rmsNormBF16Cuda(const __nv_bfloat16 *x, const __nv_bfloat16 *weight, __nv_bfloat16 *out,
                            int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  return launch(x, weight, out, rows, cols, eps, stream);
}

} // namespace nnsc::kernels

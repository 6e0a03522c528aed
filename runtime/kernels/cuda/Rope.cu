//===- Rope.cu - half-split rotary embedding in CUDA ------------*- CUDA -*-===//
//
// One thread per output element; reads of x, cos and sin are coalesced along head_dim.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/RopeCuda.h"

#include "PagedAttentionCommon.cuh"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

constexpr int kThreads = 256;

using detail::fromFloat;
using detail::toFloat;

/// The value as LibTorch holds it in dtype T.
template <typename T> __device__ inline float rounded(float x) { return toFloat(fromFloat<T>(x)); }

template <typename T>
__global__ void ropeKernel(const T *__restrict__ x, const T *__restrict__ cos,
                           const T *__restrict__ sin, T *__restrict__ out, RopeShape shape) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t dim = shape.headDim, half = dim / 2;
  if (index >= shape.numTokens * shape.numHeads * dim)
    return;
  const int64_t i = index % dim;
  const int64_t head = (index / dim) % shape.numHeads;
  const int64_t token = index / (dim * shape.numHeads);
  const T *row = x + token * shape.tokenStride + head * shape.headStride;
  const float c = toFloat(cos[token * dim + i]), s = toFloat(sin[token * dim + i]);
  const float rotated = i < half ? -toFloat(row[i + half]) : toFloat(row[i - half]);
  const float value = rounded<T>(toFloat(row[i]) * c) + rounded<T>(rotated * s);
  out[index] = fromFloat<T>(value);
}

template <typename T>
cudaError_t launchRope(const T *x, const T *cos, const T *sin, T *out, const RopeShape &shape,
                       cudaStream_t stream) {
  if (shape.headDim % 2 != 0)
    return cudaErrorInvalidValue;
  const int64_t total = shape.numTokens * shape.numHeads * shape.headDim;
  if (total == 0)
    return cudaSuccess;
  const auto blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  ropeKernel<T><<<blocks, kThreads, 0, stream>>>(x, cos, sin, out, shape);
  return cudaGetLastError();
}

} // namespace

cudaError_t ropeCuda(const float *x, const float *cos, const float *sin, float *out,
                     const RopeShape &shape, cudaStream_t stream) {
  return launchRope(x, cos, sin, out, shape, stream);
}

cudaError_t ropeCuda(const __nv_bfloat16 *x, const __nv_bfloat16 *cos, const __nv_bfloat16 *sin,
                     __nv_bfloat16 *out, const RopeShape &shape, cudaStream_t stream) {
  return launchRope(x, cos, sin, out, shape, stream);
}

} // namespace nnsc::kernels

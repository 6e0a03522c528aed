//===- RopeCuda.h - half-split rotary embedding in CUDA ---------*- C++ -*-===//
//
// Device-pointer version of RotaryEmbedding::apply: out = x * cos + rotate_half(x) * sin with
// rotate_half(x) = cat(-x2, x1), rounding each product and the sum to the dtype as LibTorch's
// op sequence does.
//   x:        [num_tokens, num_heads, head_dim], head_dim contiguous, any token/head strides
//   cos, sin: [num_tokens, head_dim] contiguous
//   out:      [num_tokens, num_heads, head_dim] contiguous
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_ROPECUDA_H
#define NNSC_RUNTIME_KERNELS_ROPECUDA_H

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace nnsc::kernels {

/// Shapes and input strides (in elements) of a RoPE launch.
struct RopeShape {
  int64_t numTokens;
  int64_t numHeads;
  int64_t headDim;
  int64_t tokenStride;
  int64_t headStride;
};

cudaError_t ropeCuda(const float *x, const float *cos, const float *sin, float *out,
                     const RopeShape &shape, cudaStream_t stream);
cudaError_t ropeCuda(const __nv_bfloat16 *x, const __nv_bfloat16 *cos, const __nv_bfloat16 *sin,
                     __nv_bfloat16 *out, const RopeShape &shape, cudaStream_t stream);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_ROPECUDA_H

//===- PrefillTiles.cuh - shared parts of the tiled prefill kernels -*- CUDA -*-===//
//
// What the SIMT and tensor-core prefill kernels share: 128 threads per block, 64 query rows
// of one sequence and head per block, 4-element vector loads and stores, the order of the
// query tiles, and their launchers for PrefillAttention.cu's dispatch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CUDA_PREFILLTILES_CUH
#define NNSC_RUNTIME_KERNELS_CUDA_PREFILLTILES_CUH

#include "nnsc/Runtime/Kernels/PrefillAttentionCuda.h"

#include "PagedAttentionCommon.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace nnsc::kernels::detail {

/// Threads per block: 4 warps.
constexpr int kTileThreads = 128;
/// Query rows per block. The SIMT kernel gives them to 16 row groups of 4 rows, each 8
/// threads wide; the tensor-core kernel to its 4 warps, 16 rows each.
constexpr int kQueryTile = 64;

/// 4 values as fp32 from 16 bytes of fp32 or 8 bytes of bf16, and back.

__device__ inline float4 load4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
__device__ inline float4 load4(const __nv_bfloat16 *p) {
  const uint2 raw = *reinterpret_cast<const uint2 *>(p);
  const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&raw.x));
  const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&raw.y));
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}
__device__ inline void store4(float *p, float4 v) { *reinterpret_cast<float4 *>(p) = v; }
__device__ inline void store4(__nv_bfloat16 *p, float4 v) {
  __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
  *reinterpret_cast<uint2 *>(p) = *reinterpret_cast<const uint2 *>(pair);
}

/// This block's query tile, the last first: a tile's rows see more keys the later it is, so
/// the longest blocks start first and the short ones fill the tail.
__device__ inline int64_t lastTileFirst() { return int64_t(gridDim.x) - 1 - blockIdx.x; }

/// The grid of a tiled launch: query tiles of the longest sequence, sequences, heads.
inline dim3 queryTileGrid(const PrefillAttentionShape &shape) {
  const int64_t tiles = (shape.maxQueryLen + kQueryTile - 1) / kQueryTile;
  return dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(shape.numSeqs),
              static_cast<unsigned>(shape.numHeads));
}

/// A tiled kernel's signature (the contract's arguments, shape by value).
template <typename T>
using TiledPrefillKernel = void (*)(const T *, const T *, const T *, const int32_t *,
                                    const int32_t *, const int32_t *, const uint8_t *, T *,
                                    PrefillAttentionShape, float);

/// Launches `kernel` over queryTileGrid(shape), kTileThreads threads a block, with
/// `sharedBytes` of dynamic shared memory. Above 48 KiB a kernel must opt in; that is set on
/// every launch (one per layer and step) so that each device the process uses has it.
template <typename T>
cudaError_t launchOnQueryTiles(TiledPrefillKernel<T> kernel, size_t sharedBytes, const T *q,
                               const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                               const int32_t *cuSeqlensK, const int32_t *blockTables,
                               const uint8_t *absent, T *out, const PrefillAttentionShape &shape,
                               float scale, cudaStream_t stream) {
  if (cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(sharedBytes)))
    return err;
  kernel<<<queryTileGrid(shape), kTileThreads, sharedBytes, stream>>>(
      q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

/// The SIMT kernel (PrefillAttentionSimt.cu) for head dims 32, 64, 96 and 128.
template <typename T>
cudaError_t launchSimtPrefill(const T *q, const T *kCache, const T *vCache,
                              const int32_t *cuSeqlensQ, const int32_t *cuSeqlensK,
                              const int32_t *blockTables, const uint8_t *absent, T *out,
                              const PrefillAttentionShape &shape, float scale, cudaStream_t stream);

/// The bf16 tensor-core kernel (PrefillAttentionMma.cu) for head dims 64 and 128, on compute
/// capability 8.0 and above.
cudaError_t launchMmaPrefill(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                             const __nv_bfloat16 *vCache, const int32_t *cuSeqlensQ,
                             const int32_t *cuSeqlensK, const int32_t *blockTables,
                             const uint8_t *absent, __nv_bfloat16 *out,
                             const PrefillAttentionShape &shape, float scale, cudaStream_t stream);

} // namespace nnsc::kernels::detail

#endif // NNSC_RUNTIME_KERNELS_CUDA_PREFILLTILES_CUH

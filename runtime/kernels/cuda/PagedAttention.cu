//===- PagedAttention.cu - Paged KV store and decode in CUDA ----*- CUDA -*-===//
//
// Same contract as the CPU kernels. Decode: one thread block per (head, sequence), running
// the query loop of PagedAttentionCommon.cuh.
//
//===----------------------------------------------------------------------===//

#include "PagedAttentionCommon.cuh"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

using detail::attendQuery;
using detail::kAttentionThreads;

template <typename T>
__global__ void storeKVCacheKernel(const T *__restrict__ key, const T *__restrict__ value,
                                   T *__restrict__ kCache, T *__restrict__ vCache,
                                   const int64_t *__restrict__ slotMapping, int64_t rowSize) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slotMapping[token];
  if (slot < 0)
    return;
  for (int64_t i = threadIdx.x; i < rowSize; i += blockDim.x) {
    kCache[slot * rowSize + i] = key[token * rowSize + i];
    vCache[slot * rowSize + i] = value[token * rowSize + i];
  }
}

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads)
    decodeAttentionKernel(const T *__restrict__ q, const T *__restrict__ kCache,
                          const T *__restrict__ vCache, const int32_t *__restrict__ contextLens,
                          const int32_t *__restrict__ blockTables,
                          const uint8_t *__restrict__ absent, T *__restrict__ out,
                          DecodeAttentionShape shape, float scale) {
  const int64_t head = blockIdx.x, seq = blockIdx.y;
  const int64_t row = (seq * shape.numHeads + head) * shape.headDim;
  attendQuery(q + row, kCache, vCache, blockTables + seq * shape.maxBlocksPerSeq, absent,
              contextLens[seq], head / (shape.numHeads / shape.numKvHeads), out + row,
              detail::CacheShape{shape.numKvHeads, shape.headDim, shape.blockSize}, scale);
}

template <typename T>
cudaError_t launchStore(const T *key, const T *value, T *kCache, T *vCache,
                        const int64_t *slotMapping, int64_t numTokens, int64_t numKvHeads,
                        int64_t headDim, cudaStream_t stream) {
  if (numTokens == 0)
    return cudaSuccess;
  storeKVCacheKernel<T><<<static_cast<unsigned>(numTokens), kAttentionThreads, 0, stream>>>(
      key, value, kCache, vCache, slotMapping, numKvHeads * headDim);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchDecode(const T *q, const T *kCache, const T *vCache, const int32_t *contextLens,
                         const int32_t *blockTables, const uint8_t *absent, T *out,
                         const DecodeAttentionShape &shape, float scale, cudaStream_t stream) {
  if (shape.headDim > kMaxCudaHeadDim || shape.numKvHeads <= 0 ||
      shape.numHeads % shape.numKvHeads != 0)
    return cudaErrorInvalidValue;
  if (shape.numSeqs == 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(shape.numHeads), static_cast<unsigned>(shape.numSeqs));
  decodeAttentionKernel<T><<<grid, kAttentionThreads, 0, stream>>>(
      q, kCache, vCache, contextLens, blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

} // namespace

cudaError_t storeKVCacheCuda(const float *key, const float *value, float *kCache, float *vCache,
                             const int64_t *slotMapping, int64_t numTokens, int64_t numKvHeads,
                             int64_t headDim, cudaStream_t stream) {
  return launchStore(key, value, kCache, vCache, slotMapping, numTokens, numKvHeads, headDim,
                     stream);
}

cudaError_t storeKVCacheCuda(const __nv_bfloat16 *key, const __nv_bfloat16 *value,
                             __nv_bfloat16 *kCache, __nv_bfloat16 *vCache,
                             const int64_t *slotMapping, int64_t numTokens, int64_t numKvHeads,
                             int64_t headDim, cudaStream_t stream) {
  return launchStore(key, value, kCache, vCache, slotMapping, numTokens, numKvHeads, headDim,
                     stream);
}

cudaError_t decodeAttentionCuda(const float *q, const float *kCache, const float *vCache,
                                const int32_t *contextLens, const int32_t *blockTables,
                                const uint8_t *absent, float *out,
                                const DecodeAttentionShape &shape, float scale,
                                cudaStream_t stream) {
  return launchDecode(q, kCache, vCache, contextLens, blockTables, absent, out, shape, scale,
                      stream);
}

cudaError_t decodeAttentionCuda(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                                const __nv_bfloat16 *vCache, const int32_t *contextLens,
                                const int32_t *blockTables, const uint8_t *absent,
                                __nv_bfloat16 *out, const DecodeAttentionShape &shape, float scale,
                                cudaStream_t stream) {
  return launchDecode(q, kCache, vCache, contextLens, blockTables, absent, out, shape, scale,
                      stream);
}

} // namespace nnsc::kernels

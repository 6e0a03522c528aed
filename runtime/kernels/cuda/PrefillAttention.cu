//===- PrefillAttention.cu - varlen paged prefill in CUDA -------*- CUDA -*-===//
//
// One thread block per (query row, head): the row finds its sequence by binary search over
// cuSeqlensQ, derives its position from the sequence's query and key lengths, and attends to
// the positions up to its own with the query loop of PagedAttentionCommon.cuh. Every query
// reads its K/V from the cache, so a cached prefix and earlier chunks need nothing special.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/PrefillAttentionCuda.h"

#include "PagedAttentionCommon.cuh"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

using detail::kAttentionThreads;

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads)
    prefillAttentionKernel(const T *__restrict__ q, const T *__restrict__ kCache,
                           const T *__restrict__ vCache, const int32_t *__restrict__ cuSeqlensQ,
                           const int32_t *__restrict__ cuSeqlensK,
                           const int32_t *__restrict__ blockTables,
                           const uint8_t *__restrict__ absent, T *__restrict__ out,
                           PrefillAttentionShape shape, float scale) {
  const int64_t row = blockIdx.x, head = blockIdx.y;
  // The last sequence whose first row is at or before `row` (sequences with no rows this
  // step share their first row with the next one and are skipped).
  int64_t lo = 0, hi = shape.numSeqs - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (cuSeqlensQ[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t seq = lo;
  const int64_t queries = cuSeqlensQ[seq + 1] - cuSeqlensQ[seq];
  const int64_t keys = cuSeqlensK[seq + 1] - cuSeqlensK[seq];
  const int64_t contextLen = keys - queries + (row - cuSeqlensQ[seq]) + 1;
  const int64_t offset = (row * shape.numHeads + head) * shape.headDim;
  detail::attendQuery(q + offset, kCache, vCache, blockTables + seq * shape.maxBlocksPerSeq, absent,
                      contextLen, head / (shape.numHeads / shape.numKvHeads), out + offset,
                      detail::CacheShape{shape.numKvHeads, shape.headDim, shape.blockSize}, scale);
}

template <typename T>
cudaError_t launchPrefill(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                          const int32_t *cuSeqlensK, const int32_t *blockTables,
                          const uint8_t *absent, T *out, const PrefillAttentionShape &shape,
                          float scale, cudaStream_t stream) {
  if (shape.headDim > kMaxCudaHeadDim || shape.numKvHeads <= 0 ||
      shape.numHeads % shape.numKvHeads != 0)
    return cudaErrorInvalidValue;
  if (shape.numTokens == 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(shape.numTokens), static_cast<unsigned>(shape.numHeads));
  prefillAttentionKernel<T><<<grid, kAttentionThreads, 0, stream>>>(
      q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

} // namespace

cudaError_t prefillAttentionCuda(const float *q, const float *kCache, const float *vCache,
                                 const int32_t *cuSeqlensQ, const int32_t *cuSeqlensK,
                                 const int32_t *blockTables, const uint8_t *absent, float *out,
                                 const PrefillAttentionShape &shape, float scale,
                                 cudaStream_t stream) {
  return launchPrefill(q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape,
                       scale, stream);
}

cudaError_t prefillAttentionCuda(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                                 const __nv_bfloat16 *vCache, const int32_t *cuSeqlensQ,
                                 const int32_t *cuSeqlensK, const int32_t *blockTables,
                                 const uint8_t *absent, __nv_bfloat16 *out,
                                 const PrefillAttentionShape &shape, float scale,
                                 cudaStream_t stream) {
  return launchPrefill(q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape,
                       scale, stream);
}

} // namespace nnsc::kernels

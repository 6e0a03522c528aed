//===- PagedAttentionCommon.cuh - one query against a paged cache -*- CUDA -*-===//
//
// The attention of one query row (one head) over the first contextLen positions of a
// sequence in the paged cache, shared by the decode and the varlen prefill kernels. One
// thread block of kAttentionThreads threads per (query row, head): the context is walked in
// chunks of kAttentionThreads keys, each thread scores one key, the block reduces the chunk's
// max and sum for an online softmax, then each thread accumulates its share of the head
// dimensions over the chunk's values (coalesced reads of a V row). Positions whose slot is
// marked in `absent` (rows of a skipped layer or self-attention, which leave no K/V) are left
// out of the softmax, as in the CPU kernels; a query that sees no key gets zeros.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CUDA_PAGEDATTENTIONCOMMON_CUH
#define NNSC_RUNTIME_KERNELS_CUDA_PAGEDATTENTIONCOMMON_CUH

#include "nnsc/Runtime/Kernels/PagedAttentionCuda.h"

#include <cuda_bf16.h>

namespace nnsc::kernels::detail {

constexpr int kAttentionThreads = 128;
constexpr int kAttentionWarps = kAttentionThreads / 32;
constexpr int kDimsPerThread = (kMaxCudaHeadDim + kAttentionThreads - 1) / kAttentionThreads;

__device__ inline float toFloat(float x) { return x; }
__device__ inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ inline T fromFloat(float x);
template <> __device__ inline float fromFloat<float>(float x) { return x; }
template <> __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}

/// Block-wide reduction over kAttentionThreads threads; every thread gets the result.
template <bool IsMax> __device__ inline float blockReduce(float x, float *shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, x, offset);
    x = IsMax ? fmaxf(x, other) : x + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    shared[warp] = x;
  __syncthreads();
  float total = shared[0];
  for (int w = 1; w < kAttentionWarps; ++w)
    total = IsMax ? fmaxf(total, shared[w]) : total + shared[w];
  __syncthreads(); // `shared` is reused by the next reduction
  return total;
}

/// Cache geometry shared by the attention kernels.
struct CacheShape {
  int64_t numKvHeads;
  int64_t headDim;
  int64_t blockSize;
};

/// out = softmax(q . K[0, contextLen)^T * scale) V[0, contextLen) for one head: q and out
/// point at head_dim values, `table` at the sequence's block table, `kvHead` selects the
/// cache rows, `absent` (null: none) marks slots without K/V. Called by all
/// kAttentionThreads threads of a block.
template <typename T>
__device__ void attendQuery(const T *__restrict__ q, const T *__restrict__ kCache,
                            const T *__restrict__ vCache, const int32_t *__restrict__ table,
                            const uint8_t *__restrict__ absent, int64_t contextLen, int64_t kvHead,
                            T *__restrict__ out, const CacheShape &shape, float scale) {
  const int64_t dim = shape.headDim;
  const int64_t tokenStride = shape.numKvHeads * dim;

  __shared__ float query[kMaxCudaHeadDim];
  __shared__ float probs[kAttentionThreads];
  __shared__ float reduction[kAttentionWarps];
  for (int64_t i = threadIdx.x; i < dim; i += kAttentionThreads)
    query[i] = toFloat(q[i]) * scale;
  __syncthreads();

  // Slot of position `pos`, and the offset of its row for this KV head in either cache.
  auto slotOf = [&](int64_t pos) {
    return int64_t(table[pos / shape.blockSize]) * shape.blockSize + pos % shape.blockSize;
  };
  auto rowOffset = [&](int64_t pos) { return slotOf(pos) * tokenStride + kvHead * dim; };

  float acc[kDimsPerThread] = {};
  float runningMax = -INFINITY, runningSum = 0.f;
  for (int64_t chunk = 0; chunk < contextLen; chunk += kAttentionThreads) {
    const int64_t pos = chunk + threadIdx.x;
    const bool seen = pos < contextLen && !(absent && absent[slotOf(pos)]);
    float score = -INFINITY;
    if (seen) {
      const T *keyRow = kCache + rowOffset(pos);
      score = 0.f;
      for (int64_t i = 0; i < dim; ++i)
        score += query[i] * toFloat(keyRow[i]);
    }
    // newMax stays -inf while every position so far is absent: nothing to add or rescale.
    const float newMax = fmaxf(runningMax, blockReduce<true>(score, reduction));
    const float p = seen ? __expf(score - newMax) : 0.f;
    probs[threadIdx.x] = p;
    const float correction = runningMax == -INFINITY ? 0.f : __expf(runningMax - newMax);
    runningSum = runningSum * correction + blockReduce<false>(p, reduction);
    runningMax = newMax;
    const int64_t inChunk = min(static_cast<int64_t>(kAttentionThreads), contextLen - chunk);
    for (int j = 0; j < kDimsPerThread; ++j) {
      const int64_t i = threadIdx.x + j * kAttentionThreads;
      if (i >= dim)
        break;
      float sum = acc[j] * correction;
      for (int64_t t = 0; t < inChunk; ++t)
        sum += probs[t] * toFloat(vCache[rowOffset(chunk + t) + i]);
      acc[j] = sum;
    }
    __syncthreads(); // probs is rewritten by the next chunk
  }
  for (int j = 0; j < kDimsPerThread; ++j) {
    const int64_t i = threadIdx.x + j * kAttentionThreads;
    if (i < dim)
      out[i] = fromFloat<T>(runningSum > 0.f ? acc[j] / runningSum : 0.f);
  }
}

} // namespace nnsc::kernels::detail

#endif // NNSC_RUNTIME_KERNELS_CUDA_PAGEDATTENTIONCOMMON_CUH

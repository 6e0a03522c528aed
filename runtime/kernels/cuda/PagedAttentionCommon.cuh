//===- PagedAttentionCommon.cuh - one query against a paged cache -*- CUDA -*-===//
//
// The attention of one query row (one head) over the first contextLen positions of a
// sequence in the paged cache, shared by the decode and the varlen prefill kernels. One
// thread block of kAttentionThreads threads per (query row, head): the context is walked in
// chunks of kAttentionThreads keys, each thread finds its key's cache row once (shared with
// the block) and scores it (16-byte vectors of the row where the head dim allows), the block
// reduces the chunk's max and sum for an online softmax, then each thread accumulates its
// share of the head dimensions over the chunk's values (coalesced reads of a V row, absent
// rows not read). Positions whose slot is
// marked in `absent` (rows of a skipped layer or self-attention, which leave no K/V) are left
// out of the softmax, as in the CPU kernels; a query that sees no key gets zeros.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CUDA_PAGEDATTENTIONCOMMON_CUH
#define NNSC_RUNTIME_KERNELS_CUDA_PAGEDATTENTIONCOMMON_CUH

#include "nnsc/Runtime/Kernels/PagedAttentionCuda.h"

#include <cuda_bf16.h>

#include <type_traits>

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

/// The element offset of the K/V row of position `pos` of a sequence (`table`: its block
/// table) in either cache, `headOffset` into the token's row of `tokenStride` elements; -1
/// when the slot is marked in `absent` (null: none).
__device__ inline int64_t cacheRowOffset(const int32_t *__restrict__ table,
                                         const uint8_t *__restrict__ absent, int64_t pos,
                                         int64_t blockSize, int64_t tokenStride,
                                         int64_t headOffset) {
  const int64_t slot = int64_t(table[pos / blockSize]) * blockSize + pos % blockSize;
  return absent && absent[slot] ? -1 : slot * tokenStride + headOffset;
}

/// q . key over `dim` values: 16-byte vectors of the key when its row allows (dim a multiple
/// of the vector, the cache 16-byte aligned), else one value at a time.
template <typename T>
__device__ inline float dotKey(const float *query, const T *__restrict__ key, int64_t dim,
                               bool vectors) {
  float sum = 0.f;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (vectors) {
      for (int64_t i = 0; i < dim; i += 8) {
        const uint4 raw = *reinterpret_cast<const uint4 *>(key + i);
        const auto *pairs = reinterpret_cast<const __nv_bfloat162 *>(&raw);
        for (int j = 0; j < 4; ++j) {
          const float2 k = __bfloat1622float2(pairs[j]);
          sum = fmaf(query[i + 2 * j], k.x, sum);
          sum = fmaf(query[i + 2 * j + 1], k.y, sum);
        }
      }
      return sum;
    }
  } else {
    if (vectors) {
      for (int64_t i = 0; i < dim; i += 4) {
        const float4 k = *reinterpret_cast<const float4 *>(key + i);
        sum = fmaf(query[i], k.x, sum);
        sum = fmaf(query[i + 1], k.y, sum);
        sum = fmaf(query[i + 2], k.z, sum);
        sum = fmaf(query[i + 3], k.w, sum);
      }
      return sum;
    }
  }
  for (int64_t i = 0; i < dim; ++i)
    sum = fmaf(query[i], toFloat(key[i]), sum);
  return sum;
}

/// out = softmax(q . K[0, contextLen)^T * scale) V[0, contextLen) for one head: q and out
/// point at head_dim values, `table` at the sequence's block table, `kvHead` selects the
/// cache rows, `absent` (null: none) marks slots without K/V. Called by all
/// kAttentionThreads threads of a block. Each chunk's cache row offsets are computed once
/// (shared memory), for the scores and for the values.
template <typename T>
__device__ void attendQuery(const T *__restrict__ q, const T *__restrict__ kCache,
                            const T *__restrict__ vCache, const int32_t *__restrict__ table,
                            const uint8_t *__restrict__ absent, int64_t contextLen, int64_t kvHead,
                            T *__restrict__ out, const CacheShape &shape, float scale) {
  const int64_t dim = shape.headDim;
  const int64_t tokenStride = shape.numKvHeads * dim;
  constexpr int64_t Vector = 16 / sizeof(T);
  const bool vectors = dim % Vector == 0 && reinterpret_cast<uintptr_t>(kCache) % 16 == 0;

  __shared__ float query[kMaxCudaHeadDim];
  __shared__ float probs[kAttentionThreads];
  __shared__ int64_t rowOffsets[kAttentionThreads]; // -1: not attended
  __shared__ float reduction[kAttentionWarps];
  for (int64_t i = threadIdx.x; i < dim; i += kAttentionThreads)
    query[i] = toFloat(q[i]) * scale;
  __syncthreads();

  float acc[kDimsPerThread] = {};
  float runningMax = -INFINITY, runningSum = 0.f;
  for (int64_t chunk = 0; chunk < contextLen; chunk += kAttentionThreads) {
    const int64_t pos = chunk + threadIdx.x;
    const int64_t offset = pos < contextLen ? cacheRowOffset(table, absent, pos, shape.blockSize,
                                                             tokenStride, kvHead * dim)
                                            : -1;
    rowOffsets[threadIdx.x] = offset; // read by others after blockReduce's barriers
    const bool seen = offset >= 0;
    const float score = seen ? dotKey(query, kCache + offset, dim, vectors) : -INFINITY;
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
        if (const int64_t row = rowOffsets[t]; row >= 0)
          sum = fmaf(probs[t], toFloat(vCache[row + i]), sum);
      acc[j] = sum;
    }
    __syncthreads(); // probs and rowOffsets are rewritten by the next chunk
  }
  for (int j = 0; j < kDimsPerThread; ++j) {
    const int64_t i = threadIdx.x + j * kAttentionThreads;
    if (i < dim)
      out[i] = fromFloat<T>(runningSum > 0.f ? acc[j] / runningSum : 0.f);
  }
}

} // namespace nnsc::kernels::detail

#endif // NNSC_RUNTIME_KERNELS_CUDA_PAGEDATTENTIONCOMMON_CUH

//===- PagedAttention.cu - Paged KV store and decode in CUDA ----*- CUDA -*-===//
//
// Same contract as the CPU kernels. Decode: one thread block per (head, sequence). The
// context is walked in chunks of kThreads keys: each thread scores one key, the block
// reduces the chunk's max and sum for an online softmax, then each thread accumulates its
// share of the head dimensions over the chunk's values (coalesced reads of a V row).
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/PagedAttentionCuda.h"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kDimsPerThread = (kMaxCudaHeadDim + kThreads - 1) / kThreads;

__device__ inline float toFloat(float x) { return x; }
__device__ inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ inline T fromFloat(float x);
template <> __device__ inline float fromFloat<float>(float x) { return x; }
template <> __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}

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

/// Block-wide reduction; every thread gets the result.
template <bool IsMax> __device__ float blockReduce(float x, float *shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, x, offset);
    x = IsMax ? fmaxf(x, other) : x + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    shared[warp] = x;
  __syncthreads();
  float total = shared[0];
  for (int w = 1; w < kWarps; ++w)
    total = IsMax ? fmaxf(total, shared[w]) : total + shared[w];
  __syncthreads(); // `shared` is reused by the next reduction
  return total;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    decodeAttentionKernel(const T *__restrict__ q, const T *__restrict__ kCache,
                          const T *__restrict__ vCache, const int32_t *__restrict__ contextLens,
                          const int32_t *__restrict__ blockTables, T *__restrict__ out,
                          DecodeAttentionShape shape, float scale) {
  const int64_t head = blockIdx.x, seq = blockIdx.y;
  const int64_t dim = shape.headDim;
  const int64_t kvHead = head / (shape.numHeads / shape.numKvHeads);
  const int64_t tokenStride = shape.numKvHeads * dim;
  const int32_t *table = blockTables + seq * shape.maxBlocksPerSeq;
  const int32_t contextLen = contextLens[seq];

  __shared__ float query[kMaxCudaHeadDim];
  __shared__ float probs[kThreads];
  __shared__ float reduction[kWarps];
  for (int64_t i = threadIdx.x; i < dim; i += kThreads)
    query[i] = toFloat(q[(seq * shape.numHeads + head) * dim + i]) * scale;
  __syncthreads();

  // Offset of position `pos`'s row for this KV head in either cache.
  auto rowOffset = [&](int64_t pos) {
    int64_t block = table[pos / shape.blockSize];
    return (block * shape.blockSize + pos % shape.blockSize) * tokenStride + kvHead * dim;
  };

  float acc[kDimsPerThread] = {};
  float runningMax = -INFINITY, runningSum = 0.f;
  for (int64_t chunk = 0; chunk < contextLen; chunk += kThreads) {
    const int64_t pos = chunk + threadIdx.x;
    float score = -INFINITY;
    if (pos < contextLen) {
      const T *keyRow = kCache + rowOffset(pos);
      score = 0.f;
      for (int64_t i = 0; i < dim; ++i)
        score += query[i] * toFloat(keyRow[i]);
    }
    const float newMax = fmaxf(runningMax, blockReduce<true>(score, reduction));
    const float p = pos < contextLen ? __expf(score - newMax) : 0.f;
    probs[threadIdx.x] = p;
    const float correction = __expf(runningMax - newMax);
    runningSum = runningSum * correction + blockReduce<false>(p, reduction);
    runningMax = newMax;
    const int64_t inChunk = min(static_cast<int64_t>(kThreads), contextLen - chunk);
    for (int j = 0; j < kDimsPerThread; ++j) {
      const int64_t i = threadIdx.x + j * kThreads;
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
    const int64_t i = threadIdx.x + j * kThreads;
    if (i < dim)
      out[(seq * shape.numHeads + head) * dim + i] = fromFloat<T>(acc[j] / runningSum);
  }
}

template <typename T>
cudaError_t launchStore(const T *key, const T *value, T *kCache, T *vCache,
                        const int64_t *slotMapping, int64_t numTokens, int64_t numKvHeads,
                        int64_t headDim, cudaStream_t stream) {
  if (numTokens == 0)
    return cudaSuccess;
  storeKVCacheKernel<T><<<static_cast<unsigned>(numTokens), kThreads, 0, stream>>>(
      key, value, kCache, vCache, slotMapping, numKvHeads * headDim);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchDecode(const T *q, const T *kCache, const T *vCache, const int32_t *contextLens,
                         const int32_t *blockTables, T *out, const DecodeAttentionShape &shape,
                         float scale, cudaStream_t stream) {
  if (shape.headDim > kMaxCudaHeadDim || shape.numKvHeads <= 0 ||
      shape.numHeads % shape.numKvHeads != 0)
    return cudaErrorInvalidValue;
  if (shape.numSeqs == 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(shape.numHeads), static_cast<unsigned>(shape.numSeqs));
  decodeAttentionKernel<T><<<grid, kThreads, 0, stream>>>(q, kCache, vCache, contextLens,
                                                          blockTables, out, shape, scale);
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
                                const int32_t *contextLens, const int32_t *blockTables, float *out,
                                const DecodeAttentionShape &shape, float scale,
                                cudaStream_t stream) {
  return launchDecode(q, kCache, vCache, contextLens, blockTables, out, shape, scale, stream);
}

cudaError_t decodeAttentionCuda(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                                const __nv_bfloat16 *vCache, const int32_t *contextLens,
                                const int32_t *blockTables, __nv_bfloat16 *out,
                                const DecodeAttentionShape &shape, float scale,
                                cudaStream_t stream) {
  return launchDecode(q, kCache, vCache, contextLens, blockTables, out, shape, scale, stream);
}

} // namespace nnsc::kernels

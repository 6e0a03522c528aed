//===- PrefillAttention.cu - varlen paged prefill in CUDA -------*- CUDA -*-===//
//
// Two kernels, one contract (PrefillAttentionCuda.h):
//
// - The tiled kernel, for head dims of 32, 64, 96 and 128 (every model the runtime loads so
//   far): one thread block of 128 threads per (64 query rows, sequence, head), the
//   FlashAttention-2 loop in fp32 SIMT arithmetic. The block stages its query tile once
//   (scaled, transposed), then walks the keys its rows can see in tiles of 32: it finds the
//   tile's cache rows through the block table once, copies K (transposed) and V into shared
//   memory as fp32, and each thread computes a 4 x 4 patch of the scores from vectors of
//   shared memory, keeps the online softmax of its 4 rows with the 7 other threads of its row
//   group (warp shuffles), and accumulates a 4 x head_dim/8 patch of the output. So each K/V
//   row is read from the cache once per 64 queries instead of once per query, and the inner
//   loops are fused multiply-adds from shared memory. Keys past a row's position, past the
//   sequence, or marked in `absent` are left out of its softmax; a row that sees no key gets
//   zeros, as in the CPU kernels.
// - The row kernel, for any other head dim (up to kMaxCudaHeadDim) and for pointers not
//   aligned for vector loads: one thread block per (query row, head), the query loop of
//   PagedAttentionCommon.cuh.
//
// Every query reads its K/V from the cache, so a cached prefix and earlier chunks need
// nothing special. docs/Backends.md, "Prefill attention", has the measurements.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/PrefillAttentionCuda.h"

#include "PagedAttentionCommon.cuh"

#include <cuda_runtime.h>
#include <mma.h>

#include <cstdlib>
#include <string_view>
#include <type_traits>

namespace nnsc::kernels {
namespace {

using detail::kAttentionThreads;

//===----------------------------------------------------------------------===//
// The tiled kernel
//===----------------------------------------------------------------------===//

constexpr int kTileThreads = 128;
/// Query rows per block: 16 row groups of 4, each group 8 threads wide.
constexpr int kQueryTile = 64;
/// Keys per shared-memory tile.
constexpr int kKeyTile = 32;
/// Row strides of the transposed tiles and the probabilities, padded by one vector so that
/// stores by consecutive threads and vector reads stay 16-byte aligned.
constexpr int kQueryStride = kQueryTile + 4;
constexpr int kKeyStride = kKeyTile + 4;

/// Shared memory of the tiled kernel for `headDim`: Q^T, K^T, V, the probabilities (fp32)
/// and the key tile's cache row offsets.
constexpr size_t tiledSharedBytes(int headDim) {
  return sizeof(float) * (size_t(headDim) * kQueryStride + size_t(headDim) * kKeyStride +
                          size_t(kKeyTile) * headDim + size_t(kQueryTile) * kKeyStride) +
         sizeof(int64_t) * kKeyTile;
}

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
__device__ inline float lane(const float4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// Reduction over the 8 consecutive lanes of a row group.
template <bool IsMax> __device__ inline float groupReduce(float x) {
  for (int offset = 4; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, x, offset);
    x = IsMax ? fmaxf(x, other) : x + other;
  }
  return x;
}

/// This block's query tile, the last first: a tile's rows see more keys the later it is, so
/// the longest blocks start first and the short ones fill the tail.
__device__ inline int64_t lastTileFirst() { return int64_t(gridDim.x) - 1 - blockIdx.x; }

template <typename T, int HeadDim>
__global__ void __launch_bounds__(kTileThreads, 2)
    tiledPrefillKernel(const T *__restrict__ q, const T *__restrict__ kCache,
                       const T *__restrict__ vCache, const int32_t *__restrict__ cuSeqlensQ,
                       const int32_t *__restrict__ cuSeqlensK,
                       const int32_t *__restrict__ blockTables, const uint8_t *__restrict__ absent,
                       T *__restrict__ out, PrefillAttentionShape shape, float scale) {
  constexpr int Vectors = HeadDim / 4; // 4-element vectors in a row
  constexpr int Chunks = HeadDim / 32; // a thread's output vectors per row
  extern __shared__ float4 sharedVectors[];
  float *queryT = reinterpret_cast<float *>(sharedVectors); // [HeadDim][kQueryStride]
  float *keyT = queryT + HeadDim * kQueryStride;            // [HeadDim][kKeyStride]
  float *values = keyT + HeadDim * kKeyStride;              // [kKeyTile][HeadDim]
  float *probs = values + kKeyTile * HeadDim;               // [kQueryTile][kKeyStride]
  auto *keyRows = reinterpret_cast<int64_t *>(probs + kQueryTile * kKeyStride); // [kKeyTile]

  const int64_t seq = blockIdx.y, head = blockIdx.z;
  const int64_t firstRow = cuSeqlensQ[seq], queries = cuSeqlensQ[seq + 1] - firstRow;
  const int64_t tileRow = lastTileFirst() * kQueryTile;
  if (tileRow >= queries)
    return; // the whole block: shorter sequences than the longest have fewer tiles
  const int64_t prefix = cuSeqlensK[seq + 1] - cuSeqlensK[seq] - queries;
  const int64_t tileRows = min(int64_t(kQueryTile), queries - tileRow);
  const int64_t keyEnd = prefix + tileRow + tileRows; // the last row of the tile sees these
  const int64_t kvHead = head / (shape.numHeads / shape.numKvHeads);
  const int64_t tokenStride = shape.numKvHeads * HeadDim;
  const int32_t *table = blockTables + seq * shape.maxBlocksPerSeq;
  const int tid = threadIdx.x;
  auto rowOf = [&](int64_t r) {
    return ((firstRow + tileRow + r) * shape.numHeads + head) * HeadDim;
  };

  for (int i = tid; i < kQueryTile * Vectors; i += kTileThreads) {
    const int r = i % kQueryTile, d = (i / kQueryTile) * 4;
    float4 v = r < tileRows ? load4(q + rowOf(r) + d) : make_float4(0.f, 0.f, 0.f, 0.f);
    queryT[(d + 0) * kQueryStride + r] = v.x * scale;
    queryT[(d + 1) * kQueryStride + r] = v.y * scale;
    queryT[(d + 2) * kQueryStride + r] = v.z * scale;
    queryT[(d + 3) * kQueryStride + r] = v.w * scale;
  }

  // Thread (group, column): rows group*4 + [0, 4), score columns column*4 + [0, 4) of a key
  // tile, output dims c*32 + column*4 + [0, 4) for c < Chunks.
  const int group = tid / 8, column = tid % 8;
  float acc[4][Chunks * 4] = {};
  float runningMax[4], runningSum[4];
  int64_t sees[4]; // keys row i sees: its position + 1
  for (int i = 0; i < 4; ++i) {
    runningMax[i] = -INFINITY;
    runningSum[i] = 0.f;
    sees[i] = prefix + tileRow + group * 4 + i + 1;
  }

  for (int64_t key0 = 0; key0 < keyEnd; key0 += kKeyTile) {
    __syncthreads(); // the last tile's keys and values are read (and the query tile written)
    if (tid < kKeyTile) {
      const int64_t pos = key0 + tid;
      int64_t offset = -1;
      if (pos < keyEnd) {
        const int64_t slot =
            int64_t(table[pos / shape.blockSize]) * shape.blockSize + pos % shape.blockSize;
        if (!(absent && absent[slot]))
          offset = slot * tokenStride + kvHead * HeadDim;
      }
      keyRows[tid] = offset;
    }
    __syncthreads();
    // Keys transposed (consecutive threads take consecutive keys: conflict-free stores),
    // values as rows (consecutive threads read consecutive dims). A key that is not there
    // reads as zeros, so no NaN of an unwritten slot reaches the sums.
    for (int i = tid; i < kKeyTile * Vectors; i += kTileThreads) {
      const int key = i % kKeyTile, d = (i / kKeyTile) * 4;
      const int64_t offset = keyRows[key];
      const float4 v = offset >= 0 ? load4(kCache + offset + d) : make_float4(0.f, 0.f, 0.f, 0.f);
      keyT[(d + 0) * kKeyStride + key] = v.x;
      keyT[(d + 1) * kKeyStride + key] = v.y;
      keyT[(d + 2) * kKeyStride + key] = v.z;
      keyT[(d + 3) * kKeyStride + key] = v.w;
    }
    for (int i = tid; i < kKeyTile * Vectors; i += kTileThreads) {
      const int key = i / Vectors, d = (i % Vectors) * 4;
      const int64_t offset = keyRows[key];
      store4(values + key * HeadDim + d,
             offset >= 0 ? load4(vCache + offset + d) : make_float4(0.f, 0.f, 0.f, 0.f));
    }
    __syncthreads();

    float score[4][4] = {};
#pragma unroll 8
    for (int d = 0; d < HeadDim; ++d) {
      const float4 qv = *reinterpret_cast<const float4 *>(queryT + d * kQueryStride + group * 4);
      const float4 kv = *reinterpret_cast<const float4 *>(keyT + d * kKeyStride + column * 4);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          score[i][j] = fmaf(lane(qv, i), lane(kv, j), score[i][j]);
    }

    for (int i = 0; i < 4; ++i) {
      bool seen[4];
      float tileMax = -INFINITY;
      for (int j = 0; j < 4; ++j) {
        const int key = column * 4 + j;
        seen[j] = key0 + key < sees[i] && keyRows[key] >= 0;
        if (seen[j])
          tileMax = fmaxf(tileMax, score[i][j]);
      }
      // newMax stays -inf while the row has seen no key: nothing to add or rescale.
      const float newMax = fmaxf(runningMax[i], groupReduce<true>(tileMax));
      float p[4], tileSum = 0.f;
      for (int j = 0; j < 4; ++j) {
        p[j] = seen[j] ? __expf(score[i][j] - newMax) : 0.f;
        tileSum += p[j];
      }
      const float correction = runningMax[i] == -INFINITY ? 0.f : __expf(runningMax[i] - newMax);
      runningSum[i] = runningSum[i] * correction + groupReduce<false>(tileSum);
      runningMax[i] = newMax;
      for (int e = 0; e < Chunks * 4; ++e)
        acc[i][e] *= correction;
      *reinterpret_cast<float4 *>(probs + (group * 4 + i) * kKeyStride + column * 4) =
          make_float4(p[0], p[1], p[2], p[3]);
    }
    __syncwarp(); // a row group's probabilities are written and read by its own 8 lanes

    for (int k = 0; k < kKeyTile; k += 4) {
      float4 pr[4];
      for (int i = 0; i < 4; ++i)
        pr[i] = *reinterpret_cast<const float4 *>(probs + (group * 4 + i) * kKeyStride + k);
      for (int kk = 0; kk < 4; ++kk)
        for (int c = 0; c < Chunks; ++c) {
          const float4 v =
              *reinterpret_cast<const float4 *>(values + (k + kk) * HeadDim + c * 32 + column * 4);
          for (int i = 0; i < 4; ++i) {
            const float pk = lane(pr[i], kk);
            acc[i][c * 4 + 0] = fmaf(pk, v.x, acc[i][c * 4 + 0]);
            acc[i][c * 4 + 1] = fmaf(pk, v.y, acc[i][c * 4 + 1]);
            acc[i][c * 4 + 2] = fmaf(pk, v.z, acc[i][c * 4 + 2]);
            acc[i][c * 4 + 3] = fmaf(pk, v.w, acc[i][c * 4 + 3]);
          }
        }
    }
  }

  for (int i = 0; i < 4; ++i) {
    const int64_t r = group * 4 + i;
    if (r >= tileRows)
      break;
    const float inverse = runningSum[i] > 0.f ? 1.f / runningSum[i] : 0.f;
    for (int c = 0; c < Chunks; ++c)
      store4(out + rowOf(r) + c * 32 + column * 4,
             make_float4(acc[i][c * 4] * inverse, acc[i][c * 4 + 1] * inverse,
                         acc[i][c * 4 + 2] * inverse, acc[i][c * 4 + 3] * inverse));
  }
}

template <typename T, int HeadDim>
cudaError_t launchTiled(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                        const int32_t *cuSeqlensK, const int32_t *blockTables,
                        const uint8_t *absent, T *out, const PrefillAttentionShape &shape,
                        float scale, cudaStream_t stream) {
  constexpr size_t bytes = tiledSharedBytes(HeadDim);
  auto *kernel = tiledPrefillKernel<T, HeadDim>;
  // Above 48 KiB a kernel must opt in; set on every launch (one per layer and step) so that
  // each device the process uses has it.
  if (cudaError_t err =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)))
    return err;
  const int64_t tiles = (shape.maxQueryLen + kQueryTile - 1) / kQueryTile;
  dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(shape.numSeqs),
            static_cast<unsigned>(shape.numHeads));
  kernel<<<grid, kTileThreads, bytes, stream>>>(q, kCache, vCache, cuSeqlensQ, cuSeqlensK,
                                                blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// The tensor-core kernel (bf16)
//===----------------------------------------------------------------------===//

/// Keys per tile of the tensor-core kernel; each of its 4 warps owns 16 of the 64 query rows.
constexpr int kMmaKeyTile = 64;
/// Row strides (elements): bf16 rows padded by 16 bytes, fp32 rows by 16 bytes, which keep
/// every 16 x 16 fragment 32-byte aligned as WMMA requires.
template <int HeadDim> constexpr int kMmaHalfStride = HeadDim + 8;
constexpr int kMmaProbStride = kMmaKeyTile + 8;
template <int HeadDim>
constexpr int kMmaScratchStride = (HeadDim > kMmaKeyTile ? HeadDim : kMmaKeyTile) + 4;

template <int HeadDim> constexpr size_t mmaSharedBytes() {
  return sizeof(__nv_bfloat16) * (size_t(kQueryTile + 2 * kMmaKeyTile) * kMmaHalfStride<HeadDim> +
                                  size_t(kQueryTile) * kMmaProbStride) +
         sizeof(float) * size_t(kQueryTile) * kMmaScratchStride<HeadDim> +
         sizeof(int64_t) * kMmaKeyTile;
}

/// Copies `rows` rows of HeadDim bf16 values (16-byte vectors; row r from src(r), or zeros
/// where src(r) is null) into a shared tile of stride kMmaHalfStride.
template <int HeadDim, typename Source>
__device__ inline void stageRows(__nv_bfloat16 *tile, int rows, Source src) {
  constexpr int Vectors = HeadDim / 8;
  for (int i = threadIdx.x; i < rows * Vectors; i += kTileThreads) {
    const int r = i / Vectors, v = (i % Vectors) * 8;
    const __nv_bfloat16 *from = src(r);
    *reinterpret_cast<uint4 *>(tile + r * kMmaHalfStride<HeadDim> + v) =
        from ? *reinterpret_cast<const uint4 *>(from + v) : make_uint4(0, 0, 0, 0);
  }
}

template <int HeadDim>
__global__ void __launch_bounds__(kTileThreads, 2)
    mmaPrefillKernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ kCache,
                     const __nv_bfloat16 *__restrict__ vCache,
                     const int32_t *__restrict__ cuSeqlensQ, const int32_t *__restrict__ cuSeqlensK,
                     const int32_t *__restrict__ blockTables, const uint8_t *__restrict__ absent,
                     __nv_bfloat16 *__restrict__ out, PrefillAttentionShape shape, float scale) {
#if __CUDA_ARCH__ >= 800
  namespace wmma = nvcuda::wmma;
  constexpr int HalfStride = kMmaHalfStride<HeadDim>, ScratchStride = kMmaScratchStride<HeadDim>;
  constexpr int Steps = HeadDim / 16; // k-steps of Q K^T, n-tiles of P V
  constexpr int Half = HeadDim / 2;   // output dims per lane
  extern __shared__ __align__(128) unsigned char sharedBytes[];
  auto *queryTile = reinterpret_cast<__nv_bfloat16 *>(sharedBytes); // [64][HalfStride]
  __nv_bfloat16 *keyTile = queryTile + kQueryTile * HalfStride;     // [64][HalfStride]
  __nv_bfloat16 *valueTile = keyTile + kMmaKeyTile * HalfStride;    // [64][HalfStride]
  __nv_bfloat16 *probs = valueTile + kMmaKeyTile * HalfStride;      // [64][kMmaProbStride]
  auto *scratch =
      reinterpret_cast<float *>(probs + kQueryTile * kMmaProbStride); // [64][ScratchStride]
  auto *keyRows = reinterpret_cast<int64_t *>(scratch + kQueryTile * ScratchStride); // [64]

  const int64_t seq = blockIdx.y, head = blockIdx.z;
  const int64_t firstRow = cuSeqlensQ[seq], queries = cuSeqlensQ[seq + 1] - firstRow;
  const int64_t tileRow = lastTileFirst() * kQueryTile;
  if (tileRow >= queries)
    return;
  const int64_t prefix = cuSeqlensK[seq + 1] - cuSeqlensK[seq] - queries;
  const int64_t tileRows = min(int64_t(kQueryTile), queries - tileRow);
  const int64_t keyEnd = prefix + tileRow + tileRows;
  const int64_t kvHead = head / (shape.numHeads / shape.numKvHeads);
  const int64_t tokenStride = shape.numKvHeads * HeadDim;
  const int32_t *table = blockTables + seq * shape.maxBlocksPerSeq;
  auto rowOf = [&](int64_t r) {
    return ((firstRow + tileRow + r) * shape.numHeads + head) * HeadDim;
  };

  stageRows<HeadDim>(queryTile, kQueryTile,
                     [&](int r) { return r < tileRows ? q + rowOf(r) : nullptr; });
  __syncthreads();
  // Warp w owns rows [16w, 16w + 16); its query fragments stay in registers.
  const int warp = threadIdx.x / 32, laneId = threadIdx.x % 32;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> queryFrag[Steps];
  for (int k = 0; k < Steps; ++k)
    wmma::load_matrix_sync(queryFrag[k], queryTile + warp * 16 * HalfStride + k * 16, HalfStride);
  float *warpScratch = scratch + warp * 16 * ScratchStride;
  __nv_bfloat16 *warpProbs = probs + warp * 16 * kMmaProbStride;

  // Lane (row, half): row warp*16 + row, score columns and output dims of its half.
  const int row = laneId / 2, half = laneId % 2;
  const int64_t sees = prefix + tileRow + warp * 16 + row + 1;
  float acc[Half] = {};
  float runningMax = -INFINITY, runningSum = 0.f;

  for (int64_t key0 = 0; key0 < keyEnd; key0 += kMmaKeyTile) {
    __syncthreads(); // the last tile's keys and values are read
    if (threadIdx.x < kMmaKeyTile) {
      const int64_t pos = key0 + threadIdx.x;
      int64_t offset = -1;
      if (pos < keyEnd) {
        const int64_t slot =
            int64_t(table[pos / shape.blockSize]) * shape.blockSize + pos % shape.blockSize;
        if (!(absent && absent[slot]))
          offset = slot * tokenStride + kvHead * HeadDim;
      }
      keyRows[threadIdx.x] = offset;
    }
    __syncthreads();
    stageRows<HeadDim>(keyTile, kMmaKeyTile,
                       [&](int r) { return keyRows[r] >= 0 ? kCache + keyRows[r] : nullptr; });
    stageRows<HeadDim>(valueTile, kMmaKeyTile,
                       [&](int r) { return keyRows[r] >= 0 ? vCache + keyRows[r] : nullptr; });
    __syncthreads();

    // Scores of the warp's 16 rows: Q (16 x HeadDim) K^T (HeadDim x 64), fp32 accumulators.
    for (int n = 0; n < kMmaKeyTile / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> scores;
      wmma::fill_fragment(scores, 0.f);
      for (int k = 0; k < Steps; ++k) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> keys;
        wmma::load_matrix_sync(keys, keyTile + n * 16 * HalfStride + k * 16, HalfStride);
        wmma::mma_sync(scores, queryFrag[k], keys, scores);
      }
      wmma::store_matrix_sync(warpScratch + n * 16, scores, ScratchStride, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax of row `row` over this tile's 64 keys, 32 per lane of the pair.
    constexpr int Columns = kMmaKeyTile / 2;
    float p[Columns];
    float tileMax = -INFINITY;
    for (int j = 0; j < Columns; ++j) {
      const int key = half * Columns + j;
      const bool seen = key0 + key < sees && keyRows[key] >= 0;
      p[j] = seen ? warpScratch[row * ScratchStride + key] * scale : -INFINITY;
      tileMax = fmaxf(tileMax, p[j]);
    }
    const float newMax =
        fmaxf(runningMax, fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, 1)));
    float tileSum = 0.f;
    for (int j = 0; j < Columns; ++j) {
      p[j] = p[j] == -INFINITY ? 0.f : __expf(p[j] - newMax);
      tileSum += p[j];
    }
    const float correction = runningMax == -INFINITY ? 0.f : __expf(runningMax - newMax);
    runningSum = runningSum * correction + tileSum + __shfl_xor_sync(0xffffffffu, tileSum, 1);
    runningMax = newMax;
    for (int j = 0; j < Columns; j += 2)
      *reinterpret_cast<__nv_bfloat162 *>(warpProbs + row * kMmaProbStride + half * Columns + j) =
          __floats2bfloat162_rn(p[j], p[j + 1]);
    __syncwarp(); // the scores are read before the product overwrites them

    // This tile's P (16 x 64, bf16) V (64 x HeadDim) into the scratch, then into acc.
    for (int n = 0; n < Steps; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> product;
      wmma::fill_fragment(product, 0.f);
      for (int k = 0; k < kMmaKeyTile / 16; ++k) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> probFrag;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> values;
        wmma::load_matrix_sync(probFrag, warpProbs + k * 16, kMmaProbStride);
        wmma::load_matrix_sync(values, valueTile + k * 16 * HalfStride + n * 16, HalfStride);
        wmma::mma_sync(product, probFrag, values, product);
      }
      wmma::store_matrix_sync(warpScratch + n * 16, product, ScratchStride, wmma::mem_row_major);
    }
    __syncwarp();
    const float *tileOut = warpScratch + row * ScratchStride + half * Half;
    for (int j = 0; j < Half; j += 4) {
      const float4 v = *reinterpret_cast<const float4 *>(tileOut + j);
      acc[j] = acc[j] * correction + v.x;
      acc[j + 1] = acc[j + 1] * correction + v.y;
      acc[j + 2] = acc[j + 2] * correction + v.z;
      acc[j + 3] = acc[j + 3] * correction + v.w;
    }
    __syncwarp(); // the product is read before the next tile's scores overwrite it
  }

  const int64_t r = warp * 16 + row;
  if (r < tileRows) {
    const float inverse = runningSum > 0.f ? 1.f / runningSum : 0.f;
    for (int j = 0; j < Half; j += 4)
      store4(out + rowOf(r) + half * Half + j,
             make_float4(acc[j] * inverse, acc[j + 1] * inverse, acc[j + 2] * inverse,
                         acc[j + 3] * inverse));
  }
#else
  __trap(); // launchPrefill takes this kernel only on compute capability 8.0 and above
#endif
}

template <int HeadDim>
cudaError_t launchMma(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                      const __nv_bfloat16 *vCache, const int32_t *cuSeqlensQ,
                      const int32_t *cuSeqlensK, const int32_t *blockTables, const uint8_t *absent,
                      __nv_bfloat16 *out, const PrefillAttentionShape &shape, float scale,
                      cudaStream_t stream) {
  constexpr size_t bytes = mmaSharedBytes<HeadDim>();
  auto *kernel = mmaPrefillKernel<HeadDim>;
  if (cudaError_t err =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)))
    return err;
  const int64_t tiles = (shape.maxQueryLen + kQueryTile - 1) / kQueryTile;
  dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(shape.numSeqs),
            static_cast<unsigned>(shape.numHeads));
  kernel<<<grid, kTileThreads, bytes, stream>>>(q, kCache, vCache, cuSeqlensQ, cuSeqlensK,
                                                blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

/// Whether the current device has bf16 tensor cores (compute capability 8.0 or above).
bool hasBf16TensorCores() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         major >= 8;
}

/// NNSC_CUDA_PREFILL=simt keeps bf16 off the tensor-core kernel (for comparisons).
bool tensorCoresAllowed() {
  static const bool allowed = [] {
    const char *choice = std::getenv("NNSC_CUDA_PREFILL");
    return !(choice && std::string_view(choice) == "simt");
  }();
  return allowed;
}

//===----------------------------------------------------------------------===//
// The row kernel
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads)
    rowPrefillKernel(const T *__restrict__ q, const T *__restrict__ kCache,
                     const T *__restrict__ vCache, const int32_t *__restrict__ cuSeqlensQ,
                     const int32_t *__restrict__ cuSeqlensK,
                     const int32_t *__restrict__ blockTables, const uint8_t *__restrict__ absent,
                     T *__restrict__ out, PrefillAttentionShape shape, float scale) {
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
cudaError_t launchRows(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                       const int32_t *cuSeqlensK, const int32_t *blockTables, const uint8_t *absent,
                       T *out, const PrefillAttentionShape &shape, float scale,
                       cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>(shape.numTokens), static_cast<unsigned>(shape.numHeads));
  rowPrefillKernel<T><<<grid, kAttentionThreads, 0, stream>>>(
      q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
cudaError_t launchPrefill(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                          const int32_t *cuSeqlensK, const int32_t *blockTables,
                          const uint8_t *absent, T *out, const PrefillAttentionShape &shape,
                          float scale, cudaStream_t stream) {
  if (shape.headDim > kMaxCudaHeadDim || shape.numKvHeads <= 0 ||
      shape.numHeads % shape.numKvHeads != 0 || shape.maxQueryLen < 0)
    return cudaErrorInvalidValue;
  if (shape.numTokens == 0)
    return cudaSuccess;
  const bool tiled = shape.maxQueryLen > 0 && aligned16(q) && aligned16(kCache) &&
                     aligned16(vCache) && aligned16(out);
  auto launch = [&](auto kernel) {
    return kernel(q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape, scale,
                  stream);
  };
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (tiled && (shape.headDim == 64 || shape.headDim == 128) && tensorCoresAllowed() &&
        hasBf16TensorCores())
      return launch(shape.headDim == 64 ? launchMma<64> : launchMma<128>);
  }
  if (tiled && shape.headDim == 32)
    return launch(launchTiled<T, 32>);
  if (tiled && shape.headDim == 64)
    return launch(launchTiled<T, 64>);
  if (tiled && shape.headDim == 96)
    return launch(launchTiled<T, 96>);
  if (tiled && shape.headDim == 128)
    return launch(launchTiled<T, 128>);
  return launch(launchRows<T>);
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

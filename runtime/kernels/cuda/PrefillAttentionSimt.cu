//===- PrefillAttentionSimt.cu - tiled prefill in fp32 SIMT -----*- CUDA -*-===//
//
// The tiled prefill kernel for fp32 (and bf16 where tensor cores are not taken), head dims
// 32, 64, 96 and 128: one thread block of 128 threads per (64 query rows, sequence, head),
// the FlashAttention-2 loop in fp32 SIMT arithmetic. The block stages its query tile once
// (scaled, transposed), then walks the keys its rows can see in tiles of 32: it finds the
// tile's cache rows through the block table once, copies K (transposed) and V into shared
// memory as fp32, and each thread computes a 4 x 4 patch of the scores from vectors of shared
// memory, keeps the online softmax of its 4 rows with the 7 other threads of its row group
// (warp shuffles), and accumulates a 4 x head_dim/8 patch of the output. So each K/V row is
// read from the cache once per 64 queries instead of once per query, and the inner loops are
// fused multiply-adds from shared memory. Keys past a row's position, past the sequence, or
// marked in `absent` are left out of its softmax; a row that sees no key gets zeros, as in
// the CPU kernels.
//
//===----------------------------------------------------------------------===//

#include "PrefillTiles.cuh"

namespace nnsc::kernels::detail {
namespace {

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
      keyRows[tid] = pos < keyEnd ? cacheRowOffset(table, absent, pos, shape.blockSize, tokenStride,
                                                   kvHead * HeadDim)
                                  : -1;
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

} // namespace

template <typename T>
cudaError_t
launchSimtPrefill(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                  const int32_t *cuSeqlensK, const int32_t *blockTables, const uint8_t *absent,
                  T *out, const PrefillAttentionShape &shape, float scale, cudaStream_t stream) {
  auto launch = [&](TiledPrefillKernel<T> kernel, int headDim) {
    return launchOnQueryTiles(kernel, tiledSharedBytes(headDim), q, kCache, vCache, cuSeqlensQ,
                              cuSeqlensK, blockTables, absent, out, shape, scale, stream);
  };
  switch (shape.headDim) {
  case 32:
    return launch(tiledPrefillKernel<T, 32>, 32);
  case 64:
    return launch(tiledPrefillKernel<T, 64>, 64);
  case 96:
    return launch(tiledPrefillKernel<T, 96>, 96);
  case 128:
    return launch(tiledPrefillKernel<T, 128>, 128);
  default:
    return cudaErrorInvalidValue;
  }
}

template cudaError_t launchSimtPrefill(const float *, const float *, const float *, const int32_t *,
                                       const int32_t *, const int32_t *, const uint8_t *, float *,
                                       const PrefillAttentionShape &, float, cudaStream_t);
template cudaError_t launchSimtPrefill(const __nv_bfloat16 *, const __nv_bfloat16 *,
                                       const __nv_bfloat16 *, const int32_t *, const int32_t *,
                                       const int32_t *, const uint8_t *, __nv_bfloat16 *,
                                       const PrefillAttentionShape &, float, cudaStream_t);

} // namespace nnsc::kernels::detail

//===- PrefillAttentionMma.cu - tiled prefill on bf16 tensor cores -*- CUDA -*-===//
//
// The tiled prefill kernel for bf16 with head dims 64 and 128 on compute capability 8.0 and
// above: one thread block of 4 warps per (64 query rows, sequence, head), each warp owning 16
// rows. The block stages its query tile once (each warp keeps its rows' fragments in
// registers), then walks the keys its rows can see in tiles of 64, staging K and V as bf16.
// Each warp computes its 16 x 64 scores with WMMA (fp32 accumulators) into shared memory,
// takes the online softmax of each row on a pair of lanes (the scale applied in fp32), writes
// the probabilities as bf16, multiplies them with V on the tensor cores, and folds the product
// into fp32 registers with the row's correction. As in FlashAttention, the probabilities are
// rounded to bf16 before P V; everything else accumulates in fp32. Masking as the SIMT kernel.
//
//===----------------------------------------------------------------------===//

#include "PrefillTiles.cuh"

#include <mma.h>

namespace nnsc::kernels::detail {
namespace {

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
      keyRows[threadIdx.x] = pos < keyEnd ? cacheRowOffset(table, absent, pos, shape.blockSize,
                                                           tokenStride, kvHead * HeadDim)
                                          : -1;
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

} // namespace

cudaError_t launchMmaPrefill(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                             const __nv_bfloat16 *vCache, const int32_t *cuSeqlensQ,
                             const int32_t *cuSeqlensK, const int32_t *blockTables,
                             const uint8_t *absent, __nv_bfloat16 *out,
                             const PrefillAttentionShape &shape, float scale, cudaStream_t stream) {
  if (shape.headDim != 64 && shape.headDim != 128)
    return cudaErrorInvalidValue;
  const bool wide = shape.headDim == 128;
  return launchOnQueryTiles<__nv_bfloat16>(wide ? mmaPrefillKernel<128> : mmaPrefillKernel<64>,
                                           wide ? mmaSharedBytes<128>() : mmaSharedBytes<64>(), q,
                                           kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables,
                                           absent, out, shape, scale, stream);
}

} // namespace nnsc::kernels::detail

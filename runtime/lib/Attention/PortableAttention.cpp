//===- PortableAttention.cpp - Paged attention in portable C++ -*- C++ -*-===//
//
// The kernel for CPUs without AVX-512 and for head sizes the AVX-512 kernels do not take
// (avx512Usable): plain C++ loops the compiler vectorizes for the build's baseline ISA. One
// item is a tile of queries times the query heads of one KV head; it walks the sequence's
// cache blocks once with an online softmax per query row. Tiles with many rows score a
// block as a small GEMM against a transposed copy of its keys; short tiles take dot
// products against the cache rows directly.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

namespace nnsc::attention {

namespace {

/// Tiles with at least this many query rows score keys from a transposed copy of the block.
constexpr int64_t TransposeMinRows = 8;

inline float dot(const float *a, const float *b, int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

/// Per-thread buffers, sized for the largest tile.
struct Scratch {
  explicit Scratch(const Dims &d)
      : rows(TileQueries * d.group()), query(rows * d.headDim), acc(rows * d.headDim),
        maxScore(rows), denom(rows), keys(d.blockSize * d.headDim), values(d.blockSize * d.headDim),
        scores(d.blockSize) {}
  int64_t rows;
  std::vector<float> query, acc, maxScore, denom, keys, values, scores;
};

/// Copies one block's keys for one KV head into `dst` transposed, [head_dim][block_size] in
/// float, so the scores of a query against the whole block are a few vector FMAs per dim.
template <typename T>
void transposeKeys(const T *src, int64_t stride, int64_t rows, int64_t headDim, int64_t blockSize,
                   float *dst) {
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < headDim; ++i)
      dst[i * blockSize + t] = static_cast<float>(src[t * stride + i]);
}

/// Points `dst` at one block's rows (keys or values) for one KV head as float: the cache
/// itself for float32, a converted copy for bfloat16. Returns the row stride.
template <typename T>
int64_t valueRows(const T *src, int64_t stride, int64_t rows, int64_t headDim,
                  std::vector<float> &buffer, const float *&dst) {
  if constexpr (std::is_same_v<T, float>) {
    dst = src;
    return stride;
  } else {
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < headDim; ++i)
        buffer[t * headDim + i] = static_cast<float>(src[t * stride + i]);
    dst = buffer.data();
    return headDim;
  }
}

template <typename T>
void attendTile(const T *q, T *out, const T *kCache, const T *vCache, const uint8_t *absent,
                const Tile &tile, int64_t kvHead, const Dims &d, float scale, int64_t window,
                bool rowInvariant) {
  // Reused while the shape stays the same: a step calls this for many tiles.
  thread_local std::unique_ptr<Scratch> scratch;
  if (!scratch || scratch->rows != TileQueries * d.group() ||
      scratch->query.size() != size_t(scratch->rows * d.headDim) ||
      scratch->scores.size() != size_t(d.blockSize))
    scratch = std::make_unique<Scratch>(d);
  Scratch &s = *scratch;
  const int64_t group = d.numHeads / d.numKvHeads;
  const int64_t dim = d.headDim;
  const int64_t rows = tile.numQueries * group;
  // Row ri = query qi, head kvHead * group + hj, at ri = qi * group + hj.
  for (int64_t qi = 0; qi < tile.numQueries; ++qi)
    for (int64_t hj = 0; hj < group; ++hj) {
      const T *src = q + ((tile.firstRow + qi) * d.numHeads + kvHead * group + hj) * dim;
      float *dst = s.query.data() + (qi * group + hj) * dim;
      for (int64_t i = 0; i < dim; ++i)
        dst[i] = static_cast<float>(src[i]) * scale;
    }
  std::fill_n(s.acc.begin(), rows * dim, 0.f);
  std::fill_n(s.maxScore.begin(), rows, -std::numeric_limits<float>::infinity());
  std::fill_n(s.denom.begin(), rows, 0.f);

  const int64_t numKeys = tile.firstPos + tile.numQueries;
  const int64_t tokenStride = d.numKvHeads * dim;
  // A sliding window: the query at position p sees keys (p - window, p]; blocks before the
  // first query's window hold nothing this tile sees.
  auto firstVisible = [&](int64_t position) {
    return window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
  };
  for (int64_t kb = firstVisible(tile.firstPos) / d.blockSize; kb * d.blockSize < numKeys; ++kb) {
    const int64_t blockStart = kb * d.blockSize;
    const int64_t inBlock = std::min(d.blockSize, numKeys - blockStart);
    const int64_t base =
        (static_cast<int64_t>(tile.blockTable[kb]) * d.blockSize * d.numKvHeads + kvHead) * dim;
    // Transposing pays off only when many query rows share the block (prefill tiles); a
    // decode tile has one row per head of the group and scores the keys in place, as every
    // tile does in batch-invariant mode (the two sum a score in different orders).
    const bool transposed = rows >= TransposeMinRows && !rowInvariant;
    const float *keys = nullptr;
    int64_t keyStride = 0;
    if (transposed)
      transposeKeys(kCache + base, tokenStride, inBlock, dim, d.blockSize, s.keys.data());
    else
      keyStride = valueRows(kCache + base, tokenStride, inBlock, dim, s.keys, keys);
    const float *values;
    int64_t valueStride = valueRows(vCache + base, tokenStride, inBlock, dim, s.values, values);
    const uint8_t *absentHere =
        absent ? absent + static_cast<int64_t>(tile.blockTable[kb]) * d.blockSize : nullptr;

    for (int64_t qi = 0; qi < tile.numQueries; ++qi) {
      // Causal: the query at position p sees keys [0, p], or its window's.
      int64_t visible = std::min(inBlock, tile.firstPos + qi - blockStart + 1);
      const int64_t hiddenBefore =
          std::max<int64_t>(0, firstVisible(tile.firstPos + qi) - blockStart);
      if (visible <= hiddenBefore)
        continue;
      for (int64_t hj = 0; hj < group; ++hj) {
        int64_t ri = qi * group + hj;
        const float *query = s.query.data() + ri * dim;
        float *acc = s.acc.data() + ri * dim;
        float *scores = s.scores.data();
        if (transposed) {
          std::fill_n(scores, visible, 0.f);
          for (int64_t i = 0; i < dim; ++i) {
            const float qd = query[i];
            const float *keyColumn = s.keys.data() + i * d.blockSize;
#pragma omp simd
            for (int64_t t = 0; t < visible; ++t)
              scores[t] += qd * keyColumn[t];
          }
        } else {
          for (int64_t t = 0; t < visible; ++t)
            scores[t] = dot(query, keys + t * keyStride, dim);
        }
        if (absentHere)
          for (int64_t t = 0; t < visible; ++t)
            if (absentHere[t])
              scores[t] = -std::numeric_limits<float>::infinity();
        for (int64_t t = 0; t < hiddenBefore; ++t)
          scores[t] = -std::numeric_limits<float>::infinity();
        float blockMax = s.maxScore[ri];
        for (int64_t t = 0; t < visible; ++t)
          blockMax = std::max(blockMax, scores[t]);
        if (blockMax == -std::numeric_limits<float>::infinity())
          continue; // nothing seen yet: every visible key so far is absent
        float correction = std::exp(s.maxScore[ri] - blockMax);
        s.maxScore[ri] = blockMax;
        float denom = s.denom[ri] * correction;
        for (int64_t i = 0; i < dim; ++i)
          acc[i] *= correction;
        for (int64_t t = 0; t < visible; ++t) {
          float p = std::exp(s.scores[t] - blockMax);
          denom += p;
          const float *value = values + t * valueStride;
#pragma omp simd
          for (int64_t i = 0; i < dim; ++i)
            acc[i] += p * value[i];
        }
        s.denom[ri] = denom;
      }
    }
  }

  for (int64_t qi = 0; qi < tile.numQueries; ++qi)
    for (int64_t hj = 0; hj < group; ++hj) {
      int64_t ri = qi * group + hj;
      T *dst = out + ((tile.firstRow + qi) * d.numHeads + kvHead * group + hj) * dim;
      // A query that sees no key at all (all absent) gets zeros.
      float inv = s.denom[ri] > 0.f ? 1.f / s.denom[ri] : 0.f;
      for (int64_t i = 0; i < dim; ++i)
        dst[i] = static_cast<T>(s.acc[ri * dim + i] * inv);
    }
}

} // namespace

void attendTilePortable(const Operands<float> &ops, const Tile &tile, int64_t kvHead) {
  attendTile(ops.q, ops.out, ops.kCache, ops.vCache, ops.absent, tile, kvHead, ops.dims, ops.scale,
             ops.window, ops.rowInvariant);
}

void attendTilePortable(const Operands<uint16_t> &ops, const Tile &tile, int64_t kvHead) {
  using BF16 = c10::BFloat16;
  static_assert(sizeof(BF16) == sizeof(uint16_t));
  attendTile(reinterpret_cast<const BF16 *>(ops.q), reinterpret_cast<BF16 *>(ops.out),
             reinterpret_cast<const BF16 *>(ops.kCache), reinterpret_cast<const BF16 *>(ops.vCache),
             ops.absent, tile, kvHead, ops.dims, ops.scale, ops.window, ops.rowInvariant);
}

} // namespace nnsc::attention

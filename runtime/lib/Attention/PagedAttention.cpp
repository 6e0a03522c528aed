//===- PagedAttention.cpp - CPU paged attention kernels ---------*- C++ -*-===//
//
// One work item is a tile of up to kTileQueries consecutive queries of one sequence times the
// query heads that share one KV head. It walks the sequence's cache blocks once, with an
// online (flash-attention style) softmax per query row, so K/V are read once per tile and
// never gathered into a contiguous copy. Items run in parallel with at::parallel_for.
// Prefill tiles score a block as a small GEMM against a transposed copy of its keys; short
// tiles (few rows) take dot products against the cache rows directly. Decode tiles (one
// query, the KV head's group of query heads) load each key and value row once for up to four
// heads at a time, so the group's independent sums keep the vector units busy instead of
// waiting on one dot product's reduction per key.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace nnsc {

namespace {

constexpr int64_t kTileQueries = 16;
/// Tiles with at least this many query rows score keys from a transposed copy of the block.
constexpr int64_t kTransposeMinRows = 8;

inline float dot(const float *a, const float *b, int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

struct Dims {
  int64_t numHeads;
  int64_t numKvHeads;
  int64_t headDim;
  int64_t numBlocks;
  int64_t blockSize;
};

/// Queries [firstRow, firstRow + numQueries) of one sequence at positions
/// [firstPos, firstPos + numQueries), and the block table of that sequence.
struct Tile {
  int64_t firstRow;
  int64_t numQueries;
  int64_t firstPos;
  const int32_t *blockTable;
};

/// Per-thread buffers, sized for the largest tile.
struct Scratch {
  explicit Scratch(const Dims &d)
      : rows(kTileQueries * (d.numHeads / d.numKvHeads)), query(rows * d.headDim),
        acc(rows * d.headDim), maxScore(rows), denom(rows), keys(d.blockSize * d.headDim),
        values(d.blockSize * d.headDim), scores(d.blockSize),
        groupScores(d.numHeads / d.numKvHeads * d.blockSize) {}
  int64_t rows;
  std::vector<float> query, acc, maxScore, denom, keys, values, scores;
  std::vector<float> groupScores; // [group, block_size], a decode tile's scores of one block
};

/// Calls f(std::integral_constant<int, n>) for n in [1, 4].
template <typename F> void withRowCount(int64_t n, F &&f) {
  switch (n) {
  case 1:
    return f(std::integral_constant<int, 1>{});
  case 2:
    return f(std::integral_constant<int, 2>{});
  case 3:
    return f(std::integral_constant<int, 3>{});
  default:
    return f(std::integral_constant<int, 4>{});
  }
}

/// Scores of N query rows ([N, dim], packed) against one key row, stored `stride` apart.
template <int N>
inline void scoreKey(const float *q, int64_t dim, const float *key, float *scores,
                     int64_t stride) {
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t i = 0; i < dim; ++i) {
    const float k = key[i];
    s0 += q[i] * k;
    if constexpr (N > 1)
      s1 += q[dim + i] * k;
    if constexpr (N > 2)
      s2 += q[2 * dim + i] * k;
    if constexpr (N > 3)
      s3 += q[3 * dim + i] * k;
  }
  scores[0] = s0;
  if constexpr (N > 1)
    scores[stride] = s1;
  if constexpr (N > 2)
    scores[2 * stride] = s2;
  if constexpr (N > 3)
    scores[3 * stride] = s3;
}

/// acc[r] += p[r * stride] * value for N accumulator rows ([N, dim], packed).
template <int N>
inline void accumulateValue(const float *value, int64_t dim, const float *p, int64_t stride,
                            float *acc) {
  const float p0 = p[0];
  const float p1 = N > 1 ? p[stride] : 0.f;
  const float p2 = N > 2 ? p[2 * stride] : 0.f;
  const float p3 = N > 3 ? p[3 * stride] : 0.f;
#pragma omp simd
  for (int64_t i = 0; i < dim; ++i) {
    const float v = value[i];
    acc[i] += p0 * v;
    if constexpr (N > 1)
      acc[dim + i] += p1 * v;
    if constexpr (N > 2)
      acc[2 * dim + i] += p2 * v;
    if constexpr (N > 3)
      acc[3 * dim + i] += p3 * v;
  }
}

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
void attendTile(const T *q, T *out, const T *kCache, const T *vCache, const Tile &tile,
                int64_t kvHead, const Dims &d, float scale, Scratch &s) {
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
  for (int64_t kb = 0; kb * d.blockSize < numKeys; ++kb) {
    const int64_t blockStart = kb * d.blockSize;
    const int64_t inBlock = std::min(d.blockSize, numKeys - blockStart);
    const int64_t base =
        (static_cast<int64_t>(tile.blockTable[kb]) * d.blockSize * d.numKvHeads + kvHead) * dim;
    // Transposing pays off only when many query rows share the block (prefill tiles); a
    // decode tile has one row per head of the group and scores the keys in place.
    const bool transposed = rows >= kTransposeMinRows;
    const float *keys = nullptr;
    int64_t keyStride = 0;
    if (transposed)
      transposeKeys(kCache + base, tokenStride, inBlock, dim, d.blockSize, s.keys.data());
    else
      keyStride = valueRows(kCache + base, tokenStride, inBlock, dim, s.keys, keys);
    const float *values;
    int64_t valueStride = valueRows(vCache + base, tokenStride, inBlock, dim, s.values, values);

    for (int64_t qi = 0; qi < tile.numQueries; ++qi) {
      // Causal: the query at position p sees keys [0, p].
      int64_t visible = std::min(inBlock, tile.firstPos + qi - blockStart + 1);
      if (visible <= 0)
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
        float blockMax = s.maxScore[ri];
        for (int64_t t = 0; t < visible; ++t)
          blockMax = std::max(blockMax, scores[t]);
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
      float inv = 1.f / s.denom[ri];
      for (int64_t i = 0; i < dim; ++i)
        dst[i] = static_cast<T>(s.acc[ri * dim + i] * inv);
    }
}

/// A one-query tile: the query heads of KV head `kvHead` at the sequence's last position.
template <typename T>
void attendDecode(const T *q, T *out, const T *kCache, const T *vCache, const Tile &tile,
                  int64_t kvHead, const Dims &d, float scale, Scratch &s) {
  const int64_t group = d.numHeads / d.numKvHeads;
  const int64_t dim = d.headDim;
  const int64_t bs = d.blockSize;
  const T *src = q + (tile.firstRow * d.numHeads + kvHead * group) * dim;
  for (int64_t i = 0; i < group * dim; ++i)
    s.query[i] = static_cast<float>(src[i]) * scale;
  std::fill_n(s.acc.begin(), group * dim, 0.f);
  std::fill_n(s.maxScore.begin(), group, -std::numeric_limits<float>::infinity());
  std::fill_n(s.denom.begin(), group, 0.f);

  const int64_t numKeys = tile.firstPos + 1;
  const int64_t tokenStride = d.numKvHeads * dim;
  float *scores = s.groupScores.data();
  for (int64_t kb = 0; kb * bs < numKeys; ++kb) {
    const int64_t inBlock = std::min(bs, numKeys - kb * bs);
    const int64_t base =
        (static_cast<int64_t>(tile.blockTable[kb]) * bs * d.numKvHeads + kvHead) * dim;
    const float *keys, *values;
    const int64_t keyStride = valueRows(kCache + base, tokenStride, inBlock, dim, s.keys, keys);
    const int64_t valueStride =
        valueRows(vCache + base, tokenStride, inBlock, dim, s.values, values);
    for (int64_t r0 = 0; r0 < group; r0 += 4)
      withRowCount(group - r0, [&](auto n) {
        for (int64_t t = 0; t < inBlock; ++t)
          scoreKey<decltype(n)::value>(s.query.data() + r0 * dim, dim, keys + t * keyStride,
                                       scores + r0 * bs + t, bs);
      });
    // Online softmax: rescale what the earlier blocks accumulated to this block's maximum and
    // turn the scores into unnormalized probabilities in place.
    for (int64_t r = 0; r < group; ++r) {
      float *row = scores + r * bs;
      float blockMax = s.maxScore[r];
      for (int64_t t = 0; t < inBlock; ++t)
        blockMax = std::max(blockMax, row[t]);
      const float correction = std::exp(s.maxScore[r] - blockMax);
      s.maxScore[r] = blockMax;
      float denom = s.denom[r] * correction;
      for (int64_t t = 0; t < inBlock; ++t) {
        row[t] = std::exp(row[t] - blockMax);
        denom += row[t];
      }
      s.denom[r] = denom;
      float *acc = s.acc.data() + r * dim;
      for (int64_t i = 0; i < dim; ++i)
        acc[i] *= correction;
    }
    for (int64_t r0 = 0; r0 < group; r0 += 4)
      withRowCount(group - r0, [&](auto n) {
        for (int64_t t = 0; t < inBlock; ++t)
          accumulateValue<decltype(n)::value>(values + t * valueStride, dim,
                                              scores + r0 * bs + t, bs, s.acc.data() + r0 * dim);
      });
  }

  T *dst = out + (tile.firstRow * d.numHeads + kvHead * group) * dim;
  for (int64_t r = 0; r < group; ++r) {
    const float inv = 1.f / s.denom[r];
    for (int64_t i = 0; i < dim; ++i)
      dst[r * dim + i] = static_cast<T>(s.acc[r * dim + i] * inv);
  }
}

template <typename T>
void runTiles(const torch::Tensor &q, torch::Tensor &out, const torch::Tensor &kCache,
              const torch::Tensor &vCache, const std::vector<Tile> &tiles, const Dims &d,
              float scale) {
  const T *qPtr = q.data_ptr<T>();
  T *outPtr = out.data_ptr<T>();
  const T *kPtr = kCache.data_ptr<T>();
  const T *vPtr = vCache.data_ptr<T>();
  auto numItems = static_cast<int64_t>(tiles.size()) * d.numKvHeads;
  at::parallel_for(0, numItems, 1, [&](int64_t begin, int64_t end) {
    Scratch scratch(d);
    for (int64_t item = begin; item < end; ++item) {
      const Tile &tile = tiles[item / d.numKvHeads];
      if (tile.numQueries == 1)
        attendDecode(qPtr, outPtr, kPtr, vPtr, tile, item % d.numKvHeads, d, scale, scratch);
      else
        attendTile(qPtr, outPtr, kPtr, vPtr, tile, item % d.numKvHeads, d, scale, scratch);
    }
  });
}

/// Checks q against the caches and returns the dimensions.
Dims checkShapes(const char *fn, const torch::Tensor &q, const torch::Tensor &kCache,
                 const torch::Tensor &vCache) {
  TORCH_CHECK(q.dim() == 3, fn, ": q must be [tokens, num_heads, head_dim], got ", q.sizes());
  TORCH_CHECK(kCache.dim() == 4, fn,
              ": kCache must be [num_blocks, block_size, num_kv_heads, head_dim], got ",
              kCache.sizes());
  TORCH_CHECK(vCache.sizes() == kCache.sizes(), fn, ": vCache ", vCache.sizes(),
              " differs from kCache ", kCache.sizes());
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 || q.scalar_type() == torch::kBFloat16, fn,
              ": only float32 and bfloat16 are supported, got ", q.scalar_type());
  TORCH_CHECK(kCache.scalar_type() == q.scalar_type() && vCache.scalar_type() == q.scalar_type(),
              fn, ": q, kCache and vCache must have one dtype, got ", q.scalar_type(), ", ",
              kCache.scalar_type(), ", ", vCache.scalar_type());
  TORCH_CHECK(q.device().is_cpu() && kCache.device().is_cpu() && vCache.device().is_cpu(), fn,
              ": tensors must be on the CPU");
  TORCH_CHECK(kCache.is_contiguous() && vCache.is_contiguous(), fn,
              ": kCache and vCache must be contiguous");
  Dims d{q.size(1), kCache.size(2), q.size(2), kCache.size(0), kCache.size(1)};
  TORCH_CHECK(kCache.size(3) == d.headDim, fn, ": head_dim of q (", d.headDim,
              ") differs from the cache's (", kCache.size(3), ")");
  TORCH_CHECK(d.numKvHeads > 0 && d.numHeads % d.numKvHeads == 0, fn, ": num_heads (", d.numHeads,
              ") must be a multiple of num_kv_heads (", d.numKvHeads, ")");
  return d;
}

/// Checks that sequence `seq` can read `numKeys` tokens through its block table row.
void checkBlockTable(const char *fn, const torch::Tensor &blockTables, int64_t seq, int64_t numKeys,
                     const Dims &d) {
  int64_t needed = (numKeys + d.blockSize - 1) / d.blockSize;
  TORCH_CHECK(needed <= blockTables.size(1), fn, ": sequence ", seq, " attends to ", numKeys,
              " tokens, which needs ", needed, " blocks, but blockTables has ", blockTables.size(1),
              " columns");
  const int32_t *row = blockTables.data_ptr<int32_t>() + seq * blockTables.size(1);
  for (int64_t j = 0; j < needed; ++j)
    TORCH_CHECK(row[j] >= 0 && row[j] < d.numBlocks, fn, ": sequence ", seq, " block ", j, " is ",
                row[j], ", outside the cache's ", d.numBlocks, " blocks");
}

void checkIndexTensor(const char *fn, const char *name, const torch::Tensor &t, int64_t dims) {
  TORCH_CHECK(t.defined() && t.dim() == dims && t.scalar_type() == torch::kInt32 &&
                  t.is_contiguous() && t.device().is_cpu(),
              fn, ": ", name, " must be a contiguous ", dims, "-d int32 CPU tensor");
}

torch::Tensor dispatch(const torch::Tensor &q, const torch::Tensor &kCache,
                       const torch::Tensor &vCache, const std::vector<Tile> &tiles, const Dims &d,
                       double scale) {
  torch::Tensor out = torch::empty_like(q);
  if (q.scalar_type() == torch::kFloat32)
    runTiles<float>(q, out, kCache, vCache, tiles, d, static_cast<float>(scale));
  else
    runTiles<c10::BFloat16>(q, out, kCache, vCache, tiles, d, static_cast<float>(scale));
  return out;
}

} // namespace

torch::Tensor prefillAttention(const torch::Tensor &query, const torch::Tensor &kCache,
                               const torch::Tensor &vCache, const AttentionMetadata &meta,
                               double scale) {
  const char *fn = "prefillAttention";
  Dims d = checkShapes(fn, query, kCache, vCache);
  checkIndexTensor(fn, "cuSeqlensQ", meta.cuSeqlensQ, 1);
  checkIndexTensor(fn, "cuSeqlensK", meta.cuSeqlensK, 1);
  checkIndexTensor(fn, "blockTables", meta.blockTables, 2);
  int64_t numSeqs = meta.cuSeqlensQ.size(0) - 1;
  TORCH_CHECK(
      numSeqs >= 0 && meta.cuSeqlensK.size(0) == numSeqs + 1 && meta.blockTables.size(0) == numSeqs,
      fn, ": cuSeqlensQ ", meta.cuSeqlensQ.sizes(), ", cuSeqlensK ", meta.cuSeqlensK.sizes(),
      " and blockTables ", meta.blockTables.sizes(), " disagree on the number of sequences");
  const int32_t *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  const int32_t *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  TORCH_CHECK(cuQ[0] == 0 && cuK[0] == 0, fn, ": cuSeqlensQ and cuSeqlensK must start at 0");
  TORCH_CHECK(cuQ[numSeqs] == query.size(0), fn, ": cuSeqlensQ ends at ", cuQ[numSeqs],
              " but q has ", query.size(0), " rows");

  torch::Tensor q = query.contiguous();
  std::vector<Tile> tiles;
  for (int64_t i = 0; i < numSeqs; ++i) {
    int64_t numQ = cuQ[i + 1] - cuQ[i];
    int64_t numK = cuK[i + 1] - cuK[i];
    TORCH_CHECK(numQ >= 0 && numK >= numQ, fn, ": sequence ", i, " has ", numQ,
                " queries but attends to ", numK,
                " tokens (needs 0 <= queries <= attended tokens)");
    checkBlockTable(fn, meta.blockTables, i, numK, d);
    const int32_t *table = meta.blockTables.data_ptr<int32_t>() + i * meta.blockTables.size(1);
    for (int64_t start = 0; start < numQ; start += kTileQueries)
      tiles.push_back(
          {cuQ[i] + start, std::min(kTileQueries, numQ - start), numK - numQ + start, table});
  }
  return dispatch(q, kCache, vCache, tiles, d, scale);
}

torch::Tensor decodeAttention(const torch::Tensor &query, const torch::Tensor &kCache,
                              const torch::Tensor &vCache, const torch::Tensor &contextLens,
                              const torch::Tensor &blockTables, double scale) {
  const char *fn = "decodeAttention";
  Dims d = checkShapes(fn, query, kCache, vCache);
  checkIndexTensor(fn, "contextLens", contextLens, 1);
  checkIndexTensor(fn, "blockTables", blockTables, 2);
  int64_t numSeqs = query.size(0);
  TORCH_CHECK(contextLens.size(0) == numSeqs && blockTables.size(0) == numSeqs, fn, ": q has ",
              numSeqs, " sequences but contextLens has ", contextLens.size(0), " and blockTables ",
              blockTables.size(0));
  torch::Tensor q = query.contiguous();
  const int32_t *lens = contextLens.data_ptr<int32_t>();
  std::vector<Tile> tiles;
  for (int64_t i = 0; i < numSeqs; ++i) {
    TORCH_CHECK(lens[i] >= 1, fn, ": sequence ", i, " has context length ", lens[i],
                " (it must include the query's own token)");
    checkBlockTable(fn, blockTables, i, lens[i], d);
    tiles.push_back({i, 1, lens[i] - 1, blockTables.data_ptr<int32_t>() + i * blockTables.size(1)});
  }
  return dispatch(q, kCache, vCache, tiles, d, scale);
}

torch::Tensor pagedAttention(const torch::Tensor &q, const torch::Tensor &kCache,
                             const torch::Tensor &vCache, const AttentionMetadata &meta,
                             double scale) {
  if (meta.isPrefill)
    return prefillAttention(q, kCache, vCache, meta, scale);
  return decodeAttention(q, kCache, vCache, meta.contextLens, meta.blockTables, scale);
}

} // namespace nnsc

//===- AttentionPattern.cpp - attention with its probabilities materialized -===//
//
// Plain LibTorch ops per sequence: gather the sequence's K/V rows through its block table,
// then the products as transformers' eager attention computes them. GQA without copying K/V
// per query head: the queries are viewed as [T, kv_heads, group, head_dim].
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/AttentionPattern.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nnsc {

namespace {

/// Cache slots of positions [0, length) of sequence `seq`.
torch::Tensor contextSlots(const AttentionMetadata &meta, int64_t seq, int64_t length,
                           int64_t blockSize) {
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  torch::Tensor positions = torch::arange(length, i64);
  torch::Tensor blocks =
      meta.blockTables[seq].to(torch::kInt64).index_select(0, positions.div(blockSize, "floor"));
  return blocks * blockSize + positions.remainder(blockSize);
}

/// Rows [num_tokens] of a cache [num_blocks, block_size, kv_heads, head_dim] at `slots`, fp32.
torch::Tensor gatherRows(const torch::Tensor &cache, const torch::Tensor &slots) {
  return cache.view({-1, cache.size(2), cache.size(3)})
      .index_select(0, slots.to(cache.device()))
      .to(torch::kFloat32);
}

void checkCache(const char *what, const torch::Tensor &cache, int64_t rows) {
  TORCH_CHECK(cache.dim() == 4, what,
              ": the cache must be [num_blocks, block_size, kv_heads, "
              "head_dim], got ",
              cache.sizes());
  TORCH_CHECK(rows >= 0, what, ": negative row count");
}

/// Batch-invariant mode (meta.batchInvariant): each query's scores, softmax and output summed
/// one term at a time in key order, so a query gives the same bits in a decode step and in any
/// prefill chunk (LibTorch's products pick their kernels by the shapes). `hidden(s)` says
/// whether the query cannot see key s.
template <typename Hidden>
void patternRow(const float *query, const float *keys, int64_t keyStride, int64_t length,
                int64_t headDim, float scale, const Hidden &hidden, float *probabilities) {
  const float inf = std::numeric_limits<float>::infinity();
  float max = -inf;
  for (int64_t s = 0; s < length; ++s) {
    float score = -inf;
    if (!hidden(s)) {
      float sum = 0.0f;
      for (int64_t d = 0; d < headDim; ++d)
        sum += query[d] * keys[s * keyStride + d];
      score = sum * scale;
    }
    probabilities[s] = score;
    max = std::max(max, score);
  }
  if (max == -inf) { // nothing visible: zeros, as the batched path gives
    std::fill_n(probabilities, length, 0.0f);
    return;
  }
  float total = 0.0f;
  for (int64_t s = 0; s < length; ++s) {
    probabilities[s] = std::exp(probabilities[s] - max);
    total += probabilities[s];
  }
  for (int64_t s = 0; s < length; ++s)
    probabilities[s] /= total;
}

void invariantPattern(const torch::Tensor &q, const torch::Tensor &kCache,
                      const AttentionMetadata &meta, double scale, const torch::Tensor &absent,
                      int64_t window, torch::Tensor &pattern) {
  const int64_t heads = q.size(1), kvHeads = kCache.size(2), headDim = q.size(2);
  const int64_t group = heads / kvHeads, numSeqs = meta.cuSeqlensQ.size(0) - 1;
  const auto *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  const auto *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  const torch::Tensor queries = q.to(torch::kFloat32).contiguous();
  const torch::Tensor positions = meta.positions.to(torch::kInt64).contiguous();
  const int64_t *pos = positions.data_ptr<int64_t>();
  float *out = pattern.data_ptr<float>();
  for (int64_t i = 0; i < numSeqs; ++i) {
    const int64_t length = cuK[i + 1] - cuK[i];
    if (cuQ[i + 1] == cuQ[i])
      continue;
    const torch::Tensor slots = contextSlots(meta, i, length, kCache.size(1));
    const torch::Tensor keys = gatherRows(kCache, slots).contiguous(); // [S, kv_heads, D]
    const torch::Tensor gone =
        absent.defined() ? absent.index_select(0, slots.to(absent.device())).to(torch::kBool).cpu()
                         : torch::zeros({length}, torch::kBool);
    const bool *isAbsent = gone.data_ptr<bool>();
    for (int64_t row = cuQ[i]; row < cuQ[i + 1]; ++row) {
      const int64_t p = pos[row];
      auto hidden = [&](int64_t s) {
        return s > p || (window > 0 && s <= p - window) || isAbsent[s];
      };
      for (int64_t h = 0; h < heads; ++h)
        patternRow(queries.data_ptr<float>() + (row * heads + h) * headDim,
                   keys.data_ptr<float>() + (h / group) * headDim, kvHeads * headDim, length,
                   headDim, static_cast<float>(scale), hidden,
                   out + (row * heads + h) * pattern.size(2));
    }
  }
}

/// pattern x V in batch-invariant mode: each output summed one key at a time in key order.
void invariantApply(const torch::Tensor &pattern, const torch::Tensor &vCache,
                    const AttentionMetadata &meta, torch::Tensor &out) {
  const int64_t heads = pattern.size(1), kvHeads = vCache.size(2), headDim = vCache.size(3);
  const int64_t group = heads / kvHeads, numSeqs = meta.cuSeqlensQ.size(0) - 1;
  const auto *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  const auto *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  const torch::Tensor probabilities = pattern.contiguous();
  torch::Tensor sums = torch::zeros({pattern.size(0), heads, headDim}, torch::kFloat32);
  for (int64_t i = 0; i < numSeqs; ++i) {
    const int64_t length = cuK[i + 1] - cuK[i];
    if (cuQ[i + 1] == cuQ[i])
      continue;
    const torch::Tensor values =
        gatherRows(vCache, contextSlots(meta, i, length, vCache.size(1))).contiguous();
    const float *v = values.data_ptr<float>();
    for (int64_t row = cuQ[i]; row < cuQ[i + 1]; ++row)
      for (int64_t h = 0; h < heads; ++h) {
        const float *p = probabilities.data_ptr<float>() + (row * heads + h) * pattern.size(2);
        float *acc = sums.data_ptr<float>() + (row * heads + h) * headDim;
        for (int64_t s = 0; s < length; ++s)
          for (int64_t d = 0; d < headDim; ++d)
            acc[d] += p[s] * v[(s * kvHeads + h / group) * headDim + d];
      }
  }
  out.copy_(sums);
}

} // namespace

torch::Tensor attentionPattern(const torch::Tensor &q, const torch::Tensor &kCache,
                               const AttentionMetadata &meta, double scale,
                               const torch::Tensor &absent, int64_t window) {
  checkCache("attentionPattern", kCache, q.size(0));
  TORCH_CHECK(q.dim() == 3 && q.size(2) == kCache.size(3) && q.size(1) % kCache.size(2) == 0,
              "attentionPattern: q must be [tokens, heads, head_dim] with heads a multiple of the "
              "cache's kv_heads, got q ",
              q.sizes(), " and a cache of ", kCache.sizes());
  const int64_t heads = q.size(1), kvHeads = kCache.size(2), headDim = q.size(2);
  const int64_t blockSize = kCache.size(1), numSeqs = meta.cuSeqlensQ.size(0) - 1;
  TORCH_CHECK(meta.cuSeqlensQ[numSeqs].item<int64_t>() == q.size(0),
              "attentionPattern: the metadata has ", meta.cuSeqlensQ[numSeqs].item<int64_t>(),
              " rows, q ", q.size(0));
  torch::Tensor pattern =
      torch::zeros({q.size(0), heads, meta.maxSeqlenK}, q.options().dtype(torch::kFloat32));
  if (meta.batchInvariant) {
    invariantPattern(q, kCache, meta, scale, absent, window, pattern);
    return pattern;
  }
  const auto *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  const auto *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < numSeqs; ++i) {
    const int64_t rows = cuQ[i + 1] - cuQ[i], length = cuK[i + 1] - cuK[i];
    if (rows == 0)
      continue;
    torch::Tensor slots = contextSlots(meta, i, length, blockSize);
    torch::Tensor k = gatherRows(kCache, slots); // [S, kv_heads, D]
    torch::Tensor qi = q.narrow(0, cuQ[i], rows)
                           .to(torch::kFloat32)
                           .reshape({rows, kvHeads, heads / kvHeads, headDim}); // [T, kv, group, D]
    torch::Tensor scores =
        torch::einsum("tkgd,skd->tkgs", {qi, k}).reshape({rows, heads, length}) * scale;
    // Causal: the query at position p sees positions [0, p], or (p - window, p].
    torch::Tensor queryPos = meta.positions.narrow(0, cuQ[i], rows).to(q.device()).unsqueeze(1);
    torch::Tensor keyPos = torch::arange(length, queryPos.options()).unsqueeze(0);
    torch::Tensor hidden = keyPos > queryPos; // [T, S]
    if (window > 0)
      hidden = hidden | (keyPos <= queryPos - window);
    if (absent.defined())
      hidden = hidden | absent.index_select(0, slots.to(absent.device()))
                            .to(torch::kBool)
                            .to(q.device())
                            .unsqueeze(0);
    scores.masked_fill_(hidden.unsqueeze(1), -inf);
    torch::Tensor p = torch::softmax(scores, -1);
    // A row with nothing visible: exp(-inf - -inf) is NaN; such a query gets zeros.
    p.masked_fill_(hidden.all(-1).view({rows, 1, 1}), 0.0);
    pattern.narrow(0, cuQ[i], rows).narrow(2, 0, length).copy_(p);
  }
  return pattern;
}

torch::Tensor applyAttentionPattern(const torch::Tensor &pattern, const torch::Tensor &vCache,
                                    const AttentionMetadata &meta, torch::ScalarType dtype) {
  checkCache("applyAttentionPattern", vCache, pattern.size(0));
  TORCH_CHECK(pattern.dim() == 3 && pattern.scalar_type() == torch::kFloat32 &&
                  pattern.size(1) % vCache.size(2) == 0 && pattern.size(2) >= meta.maxSeqlenK,
              "applyAttentionPattern: the pattern must be float32 [tokens, heads, >= ",
              meta.maxSeqlenK, "], got ", pattern.scalar_type(), " ", pattern.sizes());
  const int64_t heads = pattern.size(1), kvHeads = vCache.size(2), headDim = vCache.size(3);
  const int64_t blockSize = vCache.size(1), numSeqs = meta.cuSeqlensQ.size(0) - 1;
  torch::Tensor out =
      torch::empty({pattern.size(0), heads, headDim}, pattern.options().dtype(dtype));
  if (meta.batchInvariant) {
    invariantApply(pattern, vCache, meta, out);
    return out;
  }
  const auto *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  const auto *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  for (int64_t i = 0; i < numSeqs; ++i) {
    const int64_t rows = cuQ[i + 1] - cuQ[i], length = cuK[i + 1] - cuK[i];
    if (rows == 0)
      continue;
    torch::Tensor v = gatherRows(vCache, contextSlots(meta, i, length, blockSize));
    torch::Tensor p = pattern.narrow(0, cuQ[i], rows)
                          .narrow(2, 0, length)
                          .reshape({rows, kvHeads, heads / kvHeads, length}); // [T, kv, group, S]
    out.narrow(0, cuQ[i], rows)
        .copy_(torch::einsum("tkgs,skd->tkgd", {p, v}).reshape({rows, heads, headDim}));
  }
  return out;
}

} // namespace nnsc

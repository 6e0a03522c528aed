//===- AttentionPattern.cpp - attention with its probabilities materialized -===//
//
// Plain LibTorch ops per sequence: gather the sequence's K/V rows through its block table,
// then the products as transformers' eager attention computes them. GQA without copying K/V
// per query head: the queries are viewed as [T, kv_heads, group, head_dim].
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/AttentionPattern.h"

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

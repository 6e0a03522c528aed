//===- AttentionPatternTest.cpp - the materialized attention path ---------===//
//
// A layer whose `self_attn.pattern` a trace binds leaves the fused paged kernels for
// attentionPattern + applyAttentionPattern. Read-only, the two halves must give the fused
// kernels' output; the pattern must be the eager softmax laid out as the site needs it; and a
// rewritten pattern is what multiplies V.
//
//===----------------------------------------------------------------------===//

#include "AttentionReference.h"

#include "nnsc/Runtime/Attention/AttentionPattern.h"

namespace nnsc::attention_test {
namespace {

/// A step over `b`: its queries, the full metadata the engine builds, and the scale.
struct Step {
  torch::Tensor q;
  AttentionMetadata meta;
  double scale;
};

Step makeStep(Batch &b, const Shape &s, torch::ScalarType dtype, bool prefill) {
  int64_t numTokens = 0;
  for (int64_t f : b.fresh)
    numTokens += f;
  auto opts = torch::TensorOptions().dtype(dtype);
  Step step{torch::randn({numTokens, s.numHeads, s.headDim}, opts), {}, 0.125};
  storeFresh(b, s, torch::randn({numTokens, s.numKvHeads, s.headDim}, opts),
             torch::randn({numTokens, s.numKvHeads, s.headDim}, opts));
  AttentionMetadata &meta = step.meta;
  meta.isPrefill = prefill;
  std::vector<int32_t> cuQ{0}, cuK{0}, lens;
  std::vector<int64_t> positions;
  for (size_t i = 0; i < b.cached.size(); ++i) {
    cuQ.push_back(cuQ.back() + int32_t(b.fresh[i]));
    cuK.push_back(cuK.back() + int32_t(b.numKeys(i)));
    lens.push_back(int32_t(b.numKeys(i)));
    for (int64_t p = b.cached[i]; p < b.numKeys(i); ++p)
      positions.push_back(p);
    meta.maxSeqlenQ = std::max(meta.maxSeqlenQ, b.fresh[i]);
    meta.maxSeqlenK = std::max(meta.maxSeqlenK, b.numKeys(i));
  }
  meta.cuSeqlensQ = torch::tensor(cuQ, torch::kInt32);
  meta.cuSeqlensK = torch::tensor(cuK, torch::kInt32);
  meta.contextLens = torch::tensor(lens, torch::kInt32);
  meta.positions = torch::tensor(positions, torch::kInt64);
  meta.blockTables = blockTableTensor(b);
  return step;
}

const Shape kShapes[] = {{9, 3, 64, 16}, {4, 4, 32, 5}, {6, 1, 16, 1}};

TEST(AttentionPatternTest, ReadOnlyPatternGivesTheFusedKernelsOutput) {
  std::mt19937 rng(7);
  for (const Shape &s : kShapes)
    for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
      // Prefill with and without cached prefixes (chunks, prefix hits), then decode.
      Batch pre = makeBatch(rng, s, {0, 13, 40}, {7, 20, 1}, dtype);
      Step p = makeStep(pre, s, dtype, true);
      torch::Tensor fused = pagedAttention(p.q, pre.kCache, pre.vCache, p.meta, p.scale);
      torch::Tensor pattern = attentionPattern(p.q, pre.kCache, p.meta, p.scale);
      expectClose(applyAttentionPattern(pattern, pre.vCache, p.meta, dtype),
                  fused.to(torch::kFloat32), dtype, "prefill " + describe(s, dtype));

      Batch dec = makeBatch(rng, s, {5, 31, 70, 0}, {1, 1, 1, 1}, dtype);
      Step d = makeStep(dec, s, dtype, false);
      fused = pagedAttention(d.q, dec.kCache, dec.vCache, d.meta, d.scale);
      pattern = attentionPattern(d.q, dec.kCache, d.meta, d.scale);
      expectClose(applyAttentionPattern(pattern, dec.vCache, d.meta, dtype),
                  fused.to(torch::kFloat32), dtype, "decode " + describe(s, dtype));
    }
}

TEST(AttentionPatternTest, PatternIsTheCausalSoftmaxOverTheContext) {
  std::mt19937 rng(11);
  const Shape s{9, 3, 64, 16};
  Batch b = makeBatch(rng, s, {0, 21}, {6, 4}, torch::kFloat32);
  Step step = makeStep(b, s, torch::kFloat32, true);
  torch::Tensor pattern = attentionPattern(step.q, b.kCache, step.meta, step.scale);
  ASSERT_EQ(pattern.sizes(), (std::vector<int64_t>{10, 9, 25}));
  ASSERT_EQ(pattern.scalar_type(), torch::kFloat32);
  int64_t row = 0;
  for (size_t i = 0; i < b.cached.size(); ++i) {
    const int64_t context = b.numKeys(i);
    for (int64_t t = 0; t < b.fresh[i]; ++t, ++row) {
      const int64_t position = b.cached[i] + t;
      torch::Tensor p = pattern[row]; // [heads, max_context]
      // Probabilities over the positions the query sees; nothing after it or past the context.
      EXPECT_TRUE(torch::allclose(p.narrow(1, 0, position + 1).sum(-1), torch::ones({9})));
      EXPECT_EQ(p.narrow(1, position + 1, 25 - position - 1).abs().sum().item<float>(), 0.0f);
      // Against softmax(q k^T * scale) of the keys gathered by hand, head 4 (KV head 1).
      std::vector<float> scores;
      for (int64_t k = 0; k <= position; ++k) {
        torch::Tensor key = b.kCache.view({-1, 3, 64})[b.slot(i, k, s.blockSize)][1];
        scores.push_back((step.q[row][4] * key).sum().item<float>() * float(step.scale));
      }
      torch::Tensor want = torch::softmax(torch::tensor(scores), 0);
      EXPECT_TRUE(torch::allclose(p[4].narrow(0, 0, position + 1), want, 1e-5, 1e-6))
          << "sequence " << i << " row " << t << " of context " << context;
    }
  }
}

TEST(AttentionPatternTest, AWrittenPatternIsWhatMultipliesV) {
  std::mt19937 rng(13);
  const Shape s{9, 3, 64, 16};
  Batch b = makeBatch(rng, s, {10, 0}, {1, 5}, torch::kFloat32);
  Step step = makeStep(b, s, torch::kFloat32, true);
  torch::Tensor pattern = attentionPattern(step.q, b.kCache, step.meta, step.scale);
  // Knock out position 0 for head 2 of every query (no renormalization, as in torch).
  pattern.select(1, 2).select(1, 0).zero_();
  torch::Tensor out = applyAttentionPattern(pattern, b.vCache, step.meta, torch::kFloat32);
  int64_t row = 0;
  for (size_t i = 0; i < b.cached.size(); ++i)
    for (int64_t t = 0; t < b.fresh[i]; ++t, ++row)
      for (int64_t h : {1, 2}) {
        torch::Tensor want = torch::zeros({64});
        for (int64_t k = 0; k < b.numKeys(i); ++k)
          want += pattern[row][h][k] * b.vCache.view({-1, 3, 64})[b.slot(i, k, s.blockSize)][h / 3];
        EXPECT_TRUE(torch::allclose(out[row][h], want, 1e-5, 1e-5))
            << "row " << row << " head " << h;
      }
}

TEST(AttentionPatternTest, AbsentKeysHaveNoProbability) {
  std::mt19937 rng(17);
  const Shape s{4, 4, 32, 5};
  Batch b = makeBatch(rng, s, {12}, {3}, torch::kFloat32);
  Step step = makeStep(b, s, torch::kFloat32, true);
  torch::Tensor absent = torch::zeros({b.kCache.size(0) * s.blockSize}, torch::kUInt8);
  for (int64_t k : {0, 4, 13})
    absent[b.slot(0, k, s.blockSize)] = 1;
  torch::Tensor pattern = attentionPattern(step.q, b.kCache, step.meta, step.scale, absent);
  for (int64_t k : {0, 4, 13})
    EXPECT_EQ(pattern.select(2, k).abs().max().item<float>(), 0.0f) << "position " << k;
  expectClose(applyAttentionPattern(pattern, b.vCache, step.meta, torch::kFloat32),
              pagedAttention(step.q, b.kCache, b.vCache, step.meta, step.scale, absent),
              torch::kFloat32, "absent keys");
}

TEST(AttentionPatternTest, RefusesAPatternNarrowerThanTheContext) {
  std::mt19937 rng(19);
  const Shape s{4, 4, 32, 5};
  Batch b = makeBatch(rng, s, {8}, {2}, torch::kFloat32);
  Step step = makeStep(b, s, torch::kFloat32, true);
  torch::Tensor narrow = torch::zeros({2, 4, 9});
  EXPECT_THROW(applyAttentionPattern(narrow, b.vCache, step.meta, torch::kFloat32), c10::Error);
}

} // namespace
} // namespace nnsc::attention_test

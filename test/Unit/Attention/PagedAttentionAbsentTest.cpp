//===- PagedAttentionAbsentTest.cpp - Keys a skipped layer left out -*- C++ -*-===//
//
// A layer a trace skipped keeps no K/V for the skipped rows (docs/Runtime.md, "Skipping a
// module"): the kernels take a per-slot `absent` map and leave those keys out. Checked against
// the LibTorch reference with the same keys masked, for decode (the AVX-512 kernel where the
// CPU has it) and prefill (tiles that see an absent key take the portable kernel), with
// absent prefixes longer than a 16-key chunk, scattered holes, and queries that see nothing.
//
//===----------------------------------------------------------------------===//

#include "AttentionReference.h"

namespace {

using namespace nnsc::attention_test;

/// An absent map for `b`: sequence 0 misses its first `prefix` positions, the others miss
/// random positions (a quarter of them); the queries' own positions stay present unless
/// `hideAll`.
torch::Tensor absentMap(std::mt19937 &rng, const Batch &b, const Shape &s, int64_t prefix,
                        bool hideAll = false) {
  torch::Tensor absent = torch::zeros({b.kCache.size(0) * s.blockSize}, torch::kUInt8);
  std::bernoulli_distribution hole(0.25);
  for (size_t i = 0; i < b.cached.size(); ++i)
    for (int64_t p = 0; p < b.numKeys(i); ++p) {
      const bool own = p >= b.cached[i];
      const bool out = hideAll || (i == 0 ? p < prefix : (!own && hole(rng)));
      if (out)
        absent[b.slot(i, p, s.blockSize)] = 1;
    }
  return absent;
}

TEST(PagedAttentionAbsent, DecodeLeavesAbsentKeysOut) {
  std::mt19937 rng(3);
  torch::manual_seed(3);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : {Shape{9, 3, 64, 16}, Shape{4, 2, 32, 5}, Shape{4, 4, 24, 7}})
      for (bool hideAll : {false, true}) {
        // Sequence 0's 70 keys before its own span two decode spans, the first all absent.
        const std::vector<int64_t> cached = {70, 7, 120, 0};
        Batch b = makeBatch(rng, s, cached, std::vector<int64_t>(cached.size(), 1), dtype);
        auto opts = torch::TensorOptions().dtype(dtype);
        const auto n = int64_t(cached.size());
        torch::Tensor q = torch::randn({n, s.numHeads, s.headDim}).to(dtype);
        storeFresh(b, s, torch::randn({n, s.numKvHeads, s.headDim}, opts),
                   torch::randn({n, s.numKvHeads, s.headDim}, opts));
        // Sequence 0's whole prompt is absent (a layer skipped in the prompt pass).
        torch::Tensor absent = absentMap(rng, b, s, /*prefix=*/70, hideAll);
        std::vector<int32_t> lens;
        for (size_t i = 0; i < cached.size(); ++i)
          lens.push_back(int32_t(b.numKeys(i)));
        torch::Tensor got =
            nnsc::decodeAttention(q, b.kCache, b.vCache, torch::tensor(lens, torch::kInt32),
                                  blockTableTensor(b), 0.3, absent);
        expectClose(got, reference(q, b, s, 0.3, absent), dtype,
                    describe(s, dtype) + (hideAll ? " all absent" : ""));
        if (hideAll)
          EXPECT_EQ(got.abs().max().item<double>(), 0.0);
      }
}

TEST(PagedAttentionAbsent, PrefillLeavesAbsentKeysOut) {
  std::mt19937 rng(4);
  torch::manual_seed(4);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : {Shape{9, 3, 64, 16}, Shape{4, 2, 32, 5}}) {
      const std::vector<int64_t> cached = {40, 0, 17}, fresh = {5, 37, 20};
      Batch b = makeBatch(rng, s, cached, fresh, dtype);
      auto opts = torch::TensorOptions().dtype(dtype);
      const int64_t tokens = 62;
      torch::Tensor q = torch::randn({tokens, s.numHeads, s.headDim}).to(dtype);
      storeFresh(b, s, torch::randn({tokens, s.numKvHeads, s.headDim}, opts),
                 torch::randn({tokens, s.numKvHeads, s.headDim}, opts));
      torch::Tensor absent = absentMap(rng, b, s, /*prefix=*/40);
      nnsc::AttentionMetadata meta;
      meta.isPrefill = true;
      std::vector<int32_t> cuQ{0}, cuK{0};
      for (size_t i = 0; i < cached.size(); ++i) {
        cuQ.push_back(cuQ.back() + int32_t(fresh[i]));
        cuK.push_back(cuK.back() + int32_t(b.numKeys(i)));
      }
      meta.cuSeqlensQ = torch::tensor(cuQ, torch::kInt32);
      meta.cuSeqlensK = torch::tensor(cuK, torch::kInt32);
      meta.blockTables = blockTableTensor(b);
      expectClose(nnsc::pagedAttention(q, b.kCache, b.vCache, meta, 0.25, absent),
                  reference(q, b, s, 0.25, absent), dtype, describe(s, dtype));
    }
}

TEST(PagedAttentionAbsent, RejectsAMapOfTheWrongSize) {
  std::mt19937 rng(5);
  const Shape s{4, 2, 32, 16};
  Batch b = makeBatch(rng, s, {3}, {1}, torch::kFloat32);
  torch::Tensor q = torch::randn({1, 4, 32});
  try {
    nnsc::decodeAttention(q, b.kCache, b.vCache, torch::tensor({4}, torch::kInt32),
                          blockTableTensor(b), 0.3, torch::zeros({7}, torch::kUInt8));
    FAIL() << "no error";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("decodeAttention: absent must be a contiguous uint8"),
              std::string::npos)
        << e.what();
  }
}

} // namespace

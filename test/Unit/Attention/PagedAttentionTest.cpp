//===- PagedAttentionTest.cpp - Paged kernels against LibTorch --*- C++ -*-===//
//
// Random batches against the LibTorch reference (AttentionReference.h), the KV store, and
// the errors bad input gets.
//
//===----------------------------------------------------------------------===//

#include "AttentionReference.h"

namespace {

using namespace nnsc::attention_test;
using nnsc::AttentionMetadata;

const Shape kShapes[] = {{8, 2, 64, 16}, {9, 3, 64, 16}, {4, 4, 128, 5}, {6, 1, 32, 1}};

TEST(PagedAttention, PrefillWithCachedPrefixesMatchesReference) {
  std::mt19937 rng(0);
  torch::manual_seed(0);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : kShapes) {
      std::uniform_int_distribution<int64_t> numSeqs(1, 5), len(1, 70), coin(0, 1);
      std::vector<int64_t> cached, fresh;
      for (int64_t i = numSeqs(rng); i > 0; --i) {
        cached.push_back(coin(rng) ? len(rng) : 0);
        fresh.push_back(len(rng));
      }
      checkPrefill(rng, s, cached, fresh, dtype);
    }
}

TEST(PagedAttention, DecodeMatchesReference) {
  std::mt19937 rng(1);
  torch::manual_seed(1);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : kShapes) {
      std::uniform_int_distribution<int64_t> numSeqs(1, 7), len(0, 300);
      std::vector<int64_t> cached;
      for (int64_t i = numSeqs(rng); i > 0; --i)
        cached.push_back(len(rng));
      checkDecode(rng, s, cached, dtype);
    }
}

// Sliding-window layers (Gemma 3's local ones): sequences shorter than, as long as and longer
// than the window, with cached prefixes that end before and inside it, in prefill and decode.
TEST(PagedAttention, SlidingWindowMatchesReference) {
  std::mt19937 rng(3);
  torch::manual_seed(3);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : kShapes)
      for (int64_t window : {1, 5, 16, 40}) {
        checkPrefill(rng, s, {0, 30, 3, 0}, {70, 20, 2, window}, dtype, 1.0, window);
        checkDecode(rng, s, {0, window - 1, window, 150}, dtype, 1.0, window);
      }
}

// One sequence on two threads whose spans leave a thread idle (one span; 64 + 8 keys): its
// KV heads are separate work items, merged across spans as before.
TEST(PagedAttention, DecodeOfOneSequenceSplitOverKvHeadsMatchesReference) {
  std::mt19937 rng(7);
  torch::manual_seed(7);
  const int saved = at::get_num_threads();
  at::set_num_threads(2);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : kShapes)
      for (int64_t cached : {0, 14, 63, 71, 95})
        checkDecode(rng, s, {cached}, dtype);
  at::set_num_threads(saved);
}

// A long sequence's keys are cut into spans of fixed length whatever the batch, so its decode
// result is the same bits alone and next to other sequences.
TEST(PagedAttention, DecodeOfASequenceDoesNotDependOnItsBatch) {
  std::mt19937 rng(5);
  torch::manual_seed(5);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    const Shape s{9, 3, 64, 16};
    const std::vector<int64_t> cached = {700, 3, 64, 129};
    Batch b = makeBatch(rng, s, cached, std::vector<int64_t>(cached.size(), 1), dtype);
    const auto n = int64_t(cached.size());
    torch::Tensor q = torch::randn({n, s.numHeads, s.headDim}).to(dtype);
    torch::Tensor tables = blockTableTensor(b);
    std::vector<int32_t> lens;
    for (size_t i = 0; i < cached.size(); ++i)
      lens.push_back(int32_t(b.numKeys(i)));
    torch::Tensor batched = nnsc::decodeAttention(q, b.kCache, b.vCache,
                                                  torch::tensor(lens, torch::kInt32), tables, 0.2);
    for (int64_t i = 0; i < n; ++i) {
      torch::Tensor alone = nnsc::decodeAttention(q.narrow(0, i, 1), b.kCache, b.vCache,
                                                  torch::tensor({lens[size_t(i)]}, torch::kInt32),
                                                  tables.narrow(0, i, 1), 0.2);
      EXPECT_TRUE(torch::equal(alone, batched.narrow(0, i, 1)))
          << "sequence " << i << " of " << cached[size_t(i)] + 1 << " keys";
    }
  }
}

/// The metadata of one step of sequence 0 of `b`: queries at positions [from, to), in
/// batch-invariant mode.
AttentionMetadata invariantStep(const Batch &b, int64_t from, int64_t to, bool prefill) {
  AttentionMetadata meta;
  meta.isPrefill = prefill;
  meta.batchInvariant = true;
  meta.cuSeqlensQ = torch::tensor({0, int32_t(to - from)}, torch::kInt32);
  meta.cuSeqlensK = torch::tensor({0, int32_t(to)}, torch::kInt32);
  meta.contextLens = torch::tensor({int32_t(to)}, torch::kInt32);
  meta.blockTables = blockTableTensor(b);
  meta.maxSeqlenQ = to - from;
  meta.maxSeqlenK = to;
  return meta;
}

TEST(PagedAttention, BatchInvariantQueriesIgnoreTheirStepAndChunk) {
  // In batch-invariant mode a query gets the same bits computed in a prefill of the whole
  // prompt, in a chunk that starts elsewhere, or alone as a decode step.
  std::mt19937 rng(7);
  torch::manual_seed(7);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    const Shape s{9, 3, 64, 16};
    const int64_t n = 70;
    Batch b = makeBatch(rng, s, {n}, {0}, dtype); // every position's K/V in the cache
    const torch::Tensor q = torch::randn({n, s.numHeads, s.headDim}).to(dtype);
    const torch::Tensor whole =
        nnsc::pagedAttention(q, b.kCache, b.vCache, invariantStep(b, 0, n, true), 0.125);
    const torch::Tensor chunk = nnsc::pagedAttention(q.narrow(0, 37, n - 37), b.kCache, b.vCache,
                                                     invariantStep(b, 37, n, true), 0.125);
    EXPECT_TRUE(torch::equal(chunk, whole.narrow(0, 37, n - 37))) << c10::toString(dtype);
    for (int64_t p : {0, 15, 16, 36, 37, 69}) {
      const torch::Tensor decode = nnsc::pagedAttention(q.narrow(0, p, 1), b.kCache, b.vCache,
                                                        invariantStep(b, p, p + 1, false), 0.125);
      EXPECT_TRUE(torch::equal(decode, whole.narrow(0, p, 1)))
          << c10::toString(dtype) << " position " << p;
    }
    expectClose(whole, reference(q, Batch{{0}, {n}, b.tables, b.kCache, b.vCache}, s, 0.125), dtype,
                "batch-invariant prefill");
  }
}

TEST(PagedAttention, StoreWritesSlotsAndSkipsNegative) {
  torch::Tensor kCache = torch::zeros({4, 3, 2, 8});
  torch::Tensor vCache = torch::zeros({4, 3, 2, 8});
  torch::Tensor k = torch::randn({3, 2, 8});
  torch::Tensor v = torch::randn({3, 2, 8});
  nnsc::storeKVCache(k, v, kCache, vCache, torch::tensor({7, -1, 0}, torch::kInt32));
  EXPECT_TRUE(torch::equal(kCache[2][1], k[0])); // slot 7 = block 2, offset 1
  EXPECT_TRUE(torch::equal(vCache[2][1], v[0]));
  EXPECT_TRUE(torch::equal(kCache[0][0], k[2]));
  // Nothing else was written: slot -1 is skipped, not wrapped around.
  for (torch::Tensor cache : {kCache, vCache}) {
    torch::Tensor rest = cache.clone().view({-1, 2, 8});
    rest[7].zero_();
    rest[0].zero_();
    EXPECT_EQ(rest.count_nonzero().item<int64_t>(), 0);
  }
}

template <typename Fn> std::string errorOf(Fn fn) {
  try {
    fn();
  } catch (const c10::Error &e) {
    return e.what();
  }
  return "";
}

TEST(PagedAttention, RejectsBadInput) {
  torch::Tensor kCache = torch::zeros({4, 16, 2, 8});
  torch::Tensor vCache = torch::zeros({4, 16, 2, 8});
  torch::Tensor q = torch::randn({1, 6, 8});
  torch::Tensor lens = torch::tensor({5}, torch::kInt32);
  torch::Tensor tables = torch::tensor({{1}}, torch::kInt32);
  EXPECT_EQ(errorOf([&] { nnsc::decodeAttention(q, kCache, vCache, lens, tables, 1.0); }), "");

  EXPECT_NE(errorOf([&] {
              nnsc::decodeAttention(torch::randn({1, 5, 8}), kCache, vCache, lens, tables, 1.0);
            }).find("num_heads (5) must be a multiple of num_kv_heads (2)"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nnsc::decodeAttention(q.to(torch::kBFloat16), kCache, vCache, lens, tables, 1.0);
            }).find("must have one dtype"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nnsc::decodeAttention(q, kCache, vCache, torch::tensor({17}, torch::kInt32), tables,
                                    1.0);
            }).find("attends to 17 tokens, which needs 2 blocks"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nnsc::decodeAttention(q, kCache, vCache, lens, torch::tensor({{9}}, torch::kInt32),
                                    1.0);
            }).find("block 0 is 9, outside the cache's 4 blocks"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nnsc::decodeAttention(q, kCache, vCache, lens.to(torch::kInt64), tables, 1.0);
            }).find("contextLens must be a contiguous 1-d int32"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nnsc::storeKVCache(torch::randn({1, 2, 8}), torch::randn({1, 2, 8}), kCache, vCache,
                                 torch::tensor({64}, torch::kInt64));
            }).find("slotMapping[0] = 64 is outside the cache's 64 slots"),
            std::string::npos);

  AttentionMetadata meta;
  meta.isPrefill = true;
  meta.cuSeqlensQ = torch::tensor({0, 3}, torch::kInt32);
  meta.cuSeqlensK = torch::tensor({0, 2}, torch::kInt32);
  meta.blockTables = tables;
  EXPECT_NE(errorOf([&] {
              nnsc::prefillAttention(torch::randn({3, 6, 8}), kCache, vCache, meta, 1.0);
            }).find("has 3 queries but attends to 2 tokens"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nnsc::prefillAttention(torch::randn({4, 6, 8}), kCache, vCache, meta, 1.0);
            }).find("cuSeqlensQ ends at 3 but q has 4 rows"),
            std::string::npos);
}

} // namespace

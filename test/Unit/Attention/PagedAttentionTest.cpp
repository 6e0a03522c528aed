//===- PagedAttentionTest.cpp - Paged kernels against LibTorch --*- C++ -*-===//
//
// The reference gathers each sequence's K/V out of the paged cache through its block table
// and computes softmax(Q K^T * scale + causal mask) V with plain LibTorch ops.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using nnsc::AttentionMetadata;

struct Shape {
  int64_t numHeads, numKvHeads, headDim, blockSize;
};

/// A batch of sequences, each with `cached` tokens already in the cache and `fresh` tokens
/// computed this step, on randomly assigned blocks.
struct Batch {
  std::vector<int64_t> cached, fresh;
  std::vector<std::vector<int32_t>> tables;
  torch::Tensor kCache, vCache;

  int64_t numKeys(size_t i) const { return cached[i] + fresh[i]; }
  int64_t slot(size_t i, int64_t pos, int64_t blockSize) const {
    return static_cast<int64_t>(tables[i][pos / blockSize]) * blockSize + pos % blockSize;
  }
};

torch::Tensor blockTableTensor(const Batch &b) {
  size_t width = 0;
  for (const auto &t : b.tables)
    width = std::max(width, t.size());
  torch::Tensor out = torch::full(
      {static_cast<int64_t>(b.tables.size()), static_cast<int64_t>(width)}, -1, torch::kInt32);
  for (size_t i = 0; i < b.tables.size(); ++i)
    for (size_t j = 0; j < b.tables[i].size(); ++j)
      out[i][j] = b.tables[i][j];
  return out;
}

/// Allocates a cache with spare blocks, assigns blocks in a random order and fills every
/// cached position with random K/V.
Batch makeBatch(std::mt19937 &rng, const Shape &s, std::vector<int64_t> cached,
                std::vector<int64_t> fresh, torch::ScalarType dtype) {
  Batch b{std::move(cached), std::move(fresh), {}, {}, {}};
  int64_t needed = 0;
  for (size_t i = 0; i < b.cached.size(); ++i)
    needed += (b.numKeys(i) + s.blockSize - 1) / s.blockSize;
  int64_t numBlocks = needed + 3;
  std::vector<int32_t> ids(numBlocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (size_t i = 0; i < b.cached.size(); ++i) {
    b.tables.emplace_back();
    for (int64_t j = 0; j * s.blockSize < b.numKeys(i); ++j)
      b.tables.back().push_back(ids[next++]);
  }
  auto opts = torch::TensorOptions().dtype(dtype);
  b.kCache = torch::randn({numBlocks, s.blockSize, s.numKvHeads, s.headDim}, opts);
  b.vCache = torch::randn({numBlocks, s.blockSize, s.numKvHeads, s.headDim}, opts);
  return b;
}

/// Stores the fresh tokens' K/V through storeKVCache with the batch's slot mapping.
void storeFresh(Batch &b, const Shape &s, const torch::Tensor &k, const torch::Tensor &v) {
  std::vector<int64_t> slots;
  for (size_t i = 0; i < b.cached.size(); ++i)
    for (int64_t p = b.cached[i]; p < b.numKeys(i); ++p)
      slots.push_back(b.slot(i, p, s.blockSize));
  nnsc::storeKVCache(k, v, b.kCache, b.vCache, torch::tensor(slots, torch::kInt64));
}

/// softmax(Q K^T * scale + causal) V for the fresh queries of every sequence, in float32.
torch::Tensor reference(const torch::Tensor &q, const Batch &b, const Shape &s, double scale) {
  std::vector<torch::Tensor> outs;
  int64_t row = 0;
  for (size_t i = 0; i < b.cached.size(); ++i) {
    int64_t numK = b.numKeys(i), numQ = b.fresh[i];
    std::vector<int64_t> slots;
    for (int64_t p = 0; p < numK; ++p)
      slots.push_back(b.slot(i, p, s.blockSize));
    torch::Tensor idx = torch::tensor(slots, torch::kInt64);
    auto flat = [&](const torch::Tensor &cache) {
      return cache.reshape({-1, s.numKvHeads, s.headDim}).index_select(0, idx).to(torch::kFloat32);
    };
    int64_t group = s.numHeads / s.numKvHeads;
    torch::Tensor k = flat(b.kCache).repeat_interleave(group, 1); // [numK, H, D]
    torch::Tensor v = flat(b.vCache).repeat_interleave(group, 1);
    torch::Tensor qs = q.slice(0, row, row + numQ).to(torch::kFloat32); // [numQ, H, D]
    torch::Tensor scores = torch::einsum("qhd,khd->hqk", {qs, k}) * scale;
    torch::Tensor qPos = torch::arange(numK - numQ, numK).unsqueeze(1);
    torch::Tensor kPos = torch::arange(numK).unsqueeze(0);
    scores = scores.masked_fill(kPos > qPos, -INFINITY);
    outs.push_back(torch::einsum("hqk,khd->qhd", {torch::softmax(scores, -1), v}));
    row += numQ;
  }
  return torch::cat(outs, 0);
}

void expectClose(const torch::Tensor &got, const torch::Tensor &want, torch::ScalarType dtype,
                 const std::string &what) {
  ASSERT_EQ(got.scalar_type(), dtype) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  double tolerance = dtype == torch::kFloat32 ? 2e-5 : 2e-2;
  double diff = (got.to(torch::kFloat32) - want).abs().max().item<double>();
  EXPECT_LE(diff, tolerance) << what << ": max abs diff " << diff;
}

const Shape kShapes[] = {{8, 2, 64, 16}, {9, 3, 64, 16}, {4, 4, 128, 5}, {6, 1, 32, 1}};

std::string describe(const Shape &s, torch::ScalarType dtype) {
  return "heads " + std::to_string(s.numHeads) + "/" + std::to_string(s.numKvHeads) + " dim " +
         std::to_string(s.headDim) + " block " + std::to_string(s.blockSize) + " " +
         c10::toString(dtype);
}

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
      Batch b = makeBatch(rng, s, cached, fresh, dtype);
      int64_t numTokens = std::accumulate(fresh.begin(), fresh.end(), int64_t{0});
      auto opts = torch::TensorOptions().dtype(dtype);
      torch::Tensor q = torch::randn({numTokens, s.numHeads, s.headDim}, opts);
      storeFresh(b, s, torch::randn({numTokens, s.numKvHeads, s.headDim}, opts),
                 torch::randn({numTokens, s.numKvHeads, s.headDim}, opts));

      AttentionMetadata meta;
      meta.isPrefill = true;
      std::vector<int32_t> cuQ{0}, cuK{0};
      for (size_t i = 0; i < cached.size(); ++i) {
        cuQ.push_back(cuQ.back() + static_cast<int32_t>(fresh[i]));
        cuK.push_back(cuK.back() + static_cast<int32_t>(b.numKeys(i)));
      }
      meta.cuSeqlensQ = torch::tensor(cuQ, torch::kInt32);
      meta.cuSeqlensK = torch::tensor(cuK, torch::kInt32);
      meta.blockTables = blockTableTensor(b);
      double scale = 1.0 / std::sqrt(static_cast<double>(s.headDim));
      expectClose(nnsc::pagedAttention(q, b.kCache, b.vCache, meta, scale),
                  reference(q, b, s, scale), dtype, describe(s, dtype));
    }
}

TEST(PagedAttention, DecodeMatchesReference) {
  std::mt19937 rng(1);
  torch::manual_seed(1);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    for (const Shape &s : kShapes) {
      std::uniform_int_distribution<int64_t> numSeqs(1, 7), len(0, 300);
      std::vector<int64_t> cached, fresh;
      for (int64_t i = numSeqs(rng); i > 0; --i) {
        cached.push_back(len(rng));
        fresh.push_back(1);
      }
      Batch b = makeBatch(rng, s, cached, fresh, dtype);
      auto numSeqsNow = static_cast<int64_t>(cached.size());
      auto opts = torch::TensorOptions().dtype(dtype);
      torch::Tensor q = torch::randn({numSeqsNow, s.numHeads, s.headDim}, opts);
      storeFresh(b, s, torch::randn({numSeqsNow, s.numKvHeads, s.headDim}, opts),
                 torch::randn({numSeqsNow, s.numKvHeads, s.headDim}, opts));
      std::vector<int32_t> lens;
      for (size_t i = 0; i < cached.size(); ++i)
        lens.push_back(static_cast<int32_t>(b.numKeys(i)));
      double scale = 0.3;
      expectClose(nnsc::decodeAttention(q, b.kCache, b.vCache, torch::tensor(lens, torch::kInt32),
                                        blockTableTensor(b), scale),
                  reference(q, b, s, scale), dtype, describe(s, dtype));
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

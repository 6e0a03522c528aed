//===- AttentionReference.h - Paged attention test helpers ------*- C++ -*-===//
//
// The reference gathers each sequence's K/V out of the paged cache through its block table
// and computes softmax(Q K^T * scale + causal mask) V with plain LibTorch ops; the checks run
// the paged kernels on random sequences and compare.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_UNIT_ATTENTION_ATTENTIONREFERENCE_H
#define NNSC_TEST_UNIT_ATTENTION_ATTENTIONREFERENCE_H

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace nnsc::attention_test {

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

inline torch::Tensor blockTableTensor(const Batch &b) {
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
inline Batch makeBatch(std::mt19937 &rng, const Shape &s, std::vector<int64_t> cached,
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
inline void storeFresh(Batch &b, const Shape &s, const torch::Tensor &k, const torch::Tensor &v) {
  std::vector<int64_t> slots;
  for (size_t i = 0; i < b.cached.size(); ++i)
    for (int64_t p = b.cached[i]; p < b.numKeys(i); ++p)
      slots.push_back(b.slot(i, p, s.blockSize));
  nnsc::storeKVCache(k, v, b.kCache, b.vCache, torch::tensor(slots, torch::kInt64));
}

/// softmax(Q K^T * scale + causal) V for the fresh queries of every sequence, in float32.
/// Keys whose slot is non-zero in `absent` ([num_blocks * block_size] uint8) are left out; a
/// query that sees no key gets zeros. With `window` > 0 the query at position p sees (p -
/// window, p] only.
inline torch::Tensor reference(const torch::Tensor &q, const Batch &b, const Shape &s, double scale,
                               const torch::Tensor &absent = {}, int64_t window = 0) {
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
    torch::Tensor hidden = kPos > qPos; // [numQ, numK]
    if (window > 0)
      hidden = hidden | (kPos <= qPos - window);
    if (absent.defined())
      hidden = hidden | absent.index_select(0, idx).to(torch::kBool).unsqueeze(0);
    scores = scores.masked_fill(hidden, -INFINITY);
    torch::Tensor probs = torch::softmax(scores, -1).nan_to_num(0.0); // no key seen: zeros
    outs.push_back(torch::einsum("hqk,khd->qhd", {probs, v}));
    row += numQ;
  }
  return torch::cat(outs, 0);
}

/// Scores grow with `qScale`, and so does their rounding error against the reference's
/// different summation order.
inline void expectClose(const torch::Tensor &got, const torch::Tensor &want,
                        torch::ScalarType dtype, const std::string &what, double qScale = 1.0) {
  ASSERT_EQ(got.scalar_type(), dtype) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  double tolerance = (dtype == torch::kFloat32 ? 2e-5 : 2e-2) * std::max(1.0, qScale);
  double diff = (got.to(torch::kFloat32) - want).abs().max().item<double>();
  EXPECT_LE(diff, tolerance) << what << ": max abs diff " << diff;
}

inline std::string describe(const Shape &s, torch::ScalarType dtype) {
  return "heads " + std::to_string(s.numHeads) + "/" + std::to_string(s.numKvHeads) + " dim " +
         std::to_string(s.headDim) + " block " + std::to_string(s.blockSize) + " " +
         c10::toString(dtype);
}

/// Runs prefill for sequences with `cached` tokens in the cache and `fresh` new ones (queries
/// drawn from randn * qScale) and compares with the reference.
inline void checkPrefill(std::mt19937 &rng, const Shape &s, std::vector<int64_t> cached,
                         std::vector<int64_t> fresh, torch::ScalarType dtype, double qScale = 1.0,
                         int64_t window = 0) {
  Batch b = makeBatch(rng, s, cached, fresh, dtype);
  int64_t numTokens = std::accumulate(fresh.begin(), fresh.end(), int64_t{0});
  auto opts = torch::TensorOptions().dtype(dtype);
  torch::Tensor q = (torch::randn({numTokens, s.numHeads, s.headDim}) * qScale).to(dtype);
  storeFresh(b, s, torch::randn({numTokens, s.numKvHeads, s.headDim}, opts),
             torch::randn({numTokens, s.numKvHeads, s.headDim}, opts));
  nnsc::AttentionMetadata meta;
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
  expectClose(nnsc::pagedAttention(q, b.kCache, b.vCache, meta, scale, {}, window),
              reference(q, b, s, scale, {}, window), dtype, describe(s, dtype), qScale);
}

/// Runs decode for sequences with `cached` tokens in the cache plus the query's own and
/// compares with the reference.
inline void checkDecode(std::mt19937 &rng, const Shape &s, std::vector<int64_t> cached,
                        torch::ScalarType dtype, double qScale = 1.0, int64_t window = 0) {
  std::vector<int64_t> fresh(cached.size(), 1);
  Batch b = makeBatch(rng, s, cached, fresh, dtype);
  auto numSeqs = static_cast<int64_t>(cached.size());
  auto opts = torch::TensorOptions().dtype(dtype);
  torch::Tensor q = (torch::randn({numSeqs, s.numHeads, s.headDim}) * qScale).to(dtype);
  storeFresh(b, s, torch::randn({numSeqs, s.numKvHeads, s.headDim}, opts),
             torch::randn({numSeqs, s.numKvHeads, s.headDim}, opts));
  std::vector<int32_t> lens;
  for (size_t i = 0; i < cached.size(); ++i)
    lens.push_back(static_cast<int32_t>(b.numKeys(i)));
  double scale = 0.3;
  expectClose(nnsc::decodeAttention(q, b.kCache, b.vCache, torch::tensor(lens, torch::kInt32),
                                    blockTableTensor(b), scale, {}, window),
              reference(q, b, s, scale, {}, window), dtype, describe(s, dtype), qScale);
}

} // namespace nnsc::attention_test

#endif // NNSC_TEST_UNIT_ATTENTION_ATTENTIONREFERENCE_H

//===- SchedulerAttentionTest.cpp - Scheduler + metadata + kernels -*- C++ -*-===//
//
// Drives the real Scheduler (chunked prefill, prefix caching, preemption) and, each step,
// builds the AttentionMetadata, stores the step's K/V and runs the paged kernels. K, V and Q
// of a token are functions of (token id, position), so every computed row must equal plain
// causal attention over its own sequence computed without any cache.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

namespace {

using namespace nnsc;

constexpr int64_t kVocab = 50, kHeads = 4, kKvHeads = 2, kDim = 16;

struct Tables {
  torch::Tensor q = torch::randn({kVocab, kHeads, kDim});
  torch::Tensor k = torch::randn({kVocab, kKvHeads, kDim});
  torch::Tensor v = torch::randn({kVocab, kKvHeads, kDim});

  /// Rows for `tokens` at `positions`: the table entry scaled by a position term.
  torch::Tensor rows(const torch::Tensor &table, const torch::Tensor &tokens,
                     const torch::Tensor &positions) const {
    torch::Tensor scale = 1.0 + 0.01 * positions.to(torch::kFloat32);
    return table.index_select(0, tokens) * scale.view({-1, 1, 1});
  }
};

torch::Tensor causalReference(const Tables &t, const Sequence &seq, int64_t begin, int64_t end) {
  torch::Tensor tokens =
      torch::tensor(std::vector<int64_t>(seq.tokenIds().begin(), seq.tokenIds().begin() + end));
  torch::Tensor pos = torch::arange(end);
  torch::Tensor q = t.rows(t.q, tokens, pos).slice(0, begin, end);
  torch::Tensor k = t.rows(t.k, tokens, pos).repeat_interleave(kHeads / kKvHeads, 1);
  torch::Tensor v = t.rows(t.v, tokens, pos).repeat_interleave(kHeads / kKvHeads, 1);
  torch::Tensor scores = torch::einsum("qhd,khd->hqk", {q, k}) / std::sqrt(double(kDim));
  torch::Tensor mask = torch::arange(end).unsqueeze(0) > torch::arange(begin, end).unsqueeze(1);
  scores = scores.masked_fill(mask, -INFINITY);
  return torch::einsum("hqk,khd->qhd", {torch::softmax(scores, -1), v});
}

int32_t nextToken(std::span<const int32_t> tokens) {
  uint64_t h = 7;
  for (int32_t t : tokens)
    h = h * 31 + static_cast<uint64_t>(t);
  return static_cast<int32_t>(1 + h % (kVocab - 1));
}

TEST(SchedulerAttention, EveryStepMatchesUncachedAttention) {
  torch::manual_seed(0);
  Tables tables;
  SchedulerConfig cfg;
  cfg.maxNumSeqs = 6;
  cfg.maxNumBatchedTokens = 24; // forces chunked prefill
  cfg.blockSize = 4;
  cfg.numBlocks = 40; // forces preemption
  cfg.maxModelLen = 100;
  Scheduler scheduler(cfg);
  std::mt19937 rng(3);
  std::vector<int32_t> shared(13);
  for (auto &x : shared)
    x = 1 + rng() % (kVocab - 1);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> prompt(shared.begin(), shared.begin() + (i % 3 ? 13 : 0));
    for (int64_t n = 1 + rng() % 30; n > 0; --n)
      prompt.push_back(1 + rng() % (kVocab - 1));
    seqs.push_back(std::make_unique<Sequence>(
        i, prompt,
        SamplingParams{.maxTokens = 5 + static_cast<int64_t>(rng() % 20), .ignoreEos = true}));
    scheduler.add(seqs.back().get());
  }

  torch::Tensor kCache = torch::zeros({cfg.numBlocks, cfg.blockSize, kKvHeads, kDim});
  torch::Tensor vCache = torch::zeros_like(kCache);
  int64_t prefillSteps = 0, decodeSteps = 0;
  while (!scheduler.isFinished()) {
    ScheduledBatch batch = scheduler.schedule();
    AttentionMetadata meta = AttentionMetadata::fromBatch(batch, cfg.blockSize);
    std::vector<int64_t> tokenIds;
    for (const Sequence *seq : batch.seqs)
      for (int64_t p = seq->numCachedTokens; p < seq->numCachedTokens + seq->numScheduledTokens;
           ++p)
        tokenIds.push_back(seq->tokenIds()[p]);
    torch::Tensor tokens = torch::tensor(tokenIds);
    storeKVCache(tables.rows(tables.k, tokens, meta.positions),
                 tables.rows(tables.v, tokens, meta.positions), kCache, vCache, meta.slotMapping);
    torch::Tensor out = pagedAttention(tables.rows(tables.q, tokens, meta.positions), kCache,
                                       vCache, meta, 1.0 / std::sqrt(double(kDim)));
    (batch.isPrefill ? prefillSteps : decodeSteps) += 1;

    int64_t row = 0;
    std::vector<int64_t> wantSampleRows;
    for (const Sequence *seq : batch.seqs) {
      int64_t begin = seq->numCachedTokens, end = begin + seq->numScheduledTokens;
      torch::Tensor got = out.slice(0, row, row + (end - begin));
      double diff = (got - causalReference(tables, *seq, begin, end)).abs().max().item<double>();
      EXPECT_LE(diff, 1e-5) << "sequence " << seq->id() << " positions [" << begin << ", " << end
                            << ")";
      row += end - begin;
      if (seq->samplesThisStep())
        wantSampleRows.push_back(row - 1);
    }
    EXPECT_TRUE(torch::equal(meta.sampleRows, torch::tensor(wantSampleRows)));

    std::vector<int32_t> sampled;
    for (const Sequence *seq : batch.samplingSeqs())
      sampled.push_back(nextToken(seq->tokenIds()));
    scheduler.postprocess(batch, sampled);
  }
  EXPECT_GT(scheduler.blockManager().numHitTokens(), 0);
  EXPECT_GT(scheduler.numPreemptions(), 0);
  EXPECT_GT(prefillSteps, 0);
  EXPECT_GT(decodeSteps, 0);
}

} // namespace

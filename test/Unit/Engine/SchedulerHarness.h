//===- SchedulerHarness.h - A token-per-slot stand-in for the model -*- C++ -*-===//
//
// The scheduler tests drive the scheduler with a stand-in for the model that keeps a token per
// KV slot: each step writes the scheduled positions through the block table, checks that every
// position the step attends to reads back the sequence's own token (catching wrong block
// tables, blocks shared before they were written, or blocks reused while in use), and picks the
// next token as a function of the whole sequence. Outputs must then equal running each request
// alone with the same function.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_UNIT_ENGINE_SCHEDULERHARNESS_H
#define NNSC_TEST_UNIT_ENGINE_SCHEDULERHARNESS_H

#include "nnsc/Runtime/Engine/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace nnsc::test {

inline constexpr int32_t kEos = 0;

/// Deterministic "model": the next token depends on every token so far.
inline int32_t nextToken(std::span<const int32_t> tokens) {
  uint64_t h = 1469598103934665603ULL;
  for (int32_t t : tokens)
    h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ULL;
  return static_cast<int32_t>(h % 61);
}

/// The tokens a request generates when it runs alone.
inline std::vector<int32_t> generateAlone(const Sequence &seq, const SchedulerConfig &cfg) {
  std::vector<int32_t> tokens(seq.promptTokenIds().begin(), seq.promptTokenIds().end());
  const SamplingParams &p = seq.samplingParams();
  std::vector<int32_t> out;
  while (true) {
    int32_t t = nextToken(tokens);
    tokens.push_back(t);
    out.push_back(t);
    bool stop = (!p.ignoreEos && t == kEos) ||
                std::find(p.stopTokenIds.begin(), p.stopTokenIds.end(), t) != p.stopTokenIds.end();
    if (stop || static_cast<int64_t>(out.size()) >= p.maxTokens ||
        static_cast<int64_t>(tokens.size()) >= cfg.maxModelLen)
      return out;
  }
}

/// The paged KV cache with one token id per slot in place of K and V.
class TokenCache {
public:
  explicit TokenCache(const SchedulerConfig &cfg)
      : blockSize(cfg.blockSize), slots(cfg.numBlocks * cfg.blockSize, -1) {}

  /// One forward pass over `batch`; returns the sampled tokens for batch.samplingSeqs().
  std::vector<int32_t> run(const ScheduledBatch &batch) {
    for (const Sequence *seq : batch.seqs) {
      EXPECT_GT(seq->numScheduledTokens, 0);
      for (int64_t p = seq->numCachedTokens; p < seq->numCachedTokens + seq->numScheduledTokens;
           ++p)
        slots[slot(*seq, p)] = seq->tokenIds()[p];
    }
    std::vector<int32_t> sampled;
    for (const Sequence *seq : batch.seqs) {
      int64_t end = seq->numCachedTokens + seq->numScheduledTokens;
      for (int64_t p = 0; p < end; ++p)
        EXPECT_EQ(slots[slot(*seq, p)], seq->tokenIds()[p])
            << "sequence " << seq->id() << " position " << p;
      if (seq->samplesThisStep())
        sampled.push_back(nextToken(seq->tokenIds()));
    }
    return sampled;
  }

private:
  int64_t slot(const Sequence &seq, int64_t pos) const {
    return seq.blockTable.at(pos / blockSize) * blockSize + pos % blockSize;
  }

  int64_t blockSize;
  std::vector<int32_t> slots;
};

/// Runs `seqs` to completion; returns the number of steps.
inline int64_t runAll(Scheduler &scheduler, std::vector<std::unique_ptr<Sequence>> &seqs) {
  TokenCache cache(scheduler.config());
  for (auto &seq : seqs)
    scheduler.add(seq.get());
  int64_t steps = 0;
  while (!scheduler.isFinished()) {
    ScheduledBatch batch = scheduler.schedule();
    EXPECT_FALSE(batch.empty());
    EXPECT_LE(batch.numTokens(), scheduler.config().maxNumBatchedTokens);
    EXPECT_LE(scheduler.numRunning(), scheduler.config().maxNumSeqs);
    if (!batch.isPrefill)
      for (const Sequence *seq : batch.seqs)
        EXPECT_EQ(seq->numScheduledTokens, 1);
    scheduler.postprocess(batch, cache.run(batch));
    if (++steps > 100000) {
      ADD_FAILURE() << "scheduler did not finish";
      break;
    }
  }
  return steps;
}

inline std::vector<int32_t> randomTokens(std::mt19937 &rng, int64_t n) {
  std::uniform_int_distribution<int32_t> token(1, 60);
  std::vector<int32_t> v(n);
  for (auto &t : v)
    t = token(rng);
  return v;
}

inline SchedulerConfig smallConfig() {
  SchedulerConfig cfg;
  cfg.maxNumSeqs = 8;
  cfg.maxNumBatchedTokens = 64;
  cfg.maxModelLen = 256;
  cfg.numBlocks = 64;
  cfg.blockSize = 4;
  cfg.eosTokenIds = {kEos};
  return cfg;
}

} // namespace nnsc::test

#endif // NNSC_TEST_UNIT_ENGINE_SCHEDULERHARNESS_H

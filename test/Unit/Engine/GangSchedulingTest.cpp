//===- GangSchedulingTest.cpp - multi-invoke gangs, hook-ended requests -*- C++ -*-===//
//
// The prompts of a multi-invoke request (a gang) must be in the same steps from admission to
// finish, whatever else runs and however often the KV cache forces preemption; requests a
// hook ends (Sequence::endAfterStep) finish with or without the step's token.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Engine/Scheduler.h"

#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>

namespace {

using nnsc::FinishReason;
using nnsc::SamplingParams;
using nnsc::ScheduledBatch;
using nnsc::Scheduler;
using nnsc::SchedulerConfig;
using nnsc::Sequence;

/// The next token of a sequence, as a function of its tokens (0 is the end token).
int32_t nextToken(std::span<const int32_t> tokens) {
  uint64_t h = 1469598103934665603ULL;
  for (int32_t t : tokens)
    h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ULL;
  return static_cast<int32_t>(h % 61);
}

std::vector<int32_t> prompt(std::mt19937 &rng, int64_t length) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < length; ++i)
    ids.push_back(int32_t(rng() % 60) + 1);
  return ids;
}

/// Runs one step: a token for every sequence that samples.
ScheduledBatch step(Scheduler &s) {
  ScheduledBatch batch = s.schedule();
  std::vector<int32_t> tokens;
  for (Sequence *seq : batch.samplingSeqs())
    tokens.push_back(nextToken(seq->tokenIds()));
  s.postprocess(batch, tokens);
  return batch;
}

TEST(GangScheduling, MembersShareEveryStepUnderPreemption) {
  int64_t preemptions = 0;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig cfg;
    cfg.maxNumSeqs = 6;
    cfg.maxNumBatchedTokens = 48;
    cfg.maxModelLen = 64;
    cfg.numBlocks = 12; // small: decode steps preempt
    cfg.blockSize = 8;
    cfg.eosTokenIds = {0};
    Scheduler s(cfg);
    std::vector<std::unique_ptr<Sequence>> seqs;
    std::vector<std::vector<Sequence *>> gangs;
    int64_t id = 0;
    for (int r = 0; r < 6; ++r) {
      SamplingParams params;
      params.maxTokens = 3 + int64_t(rng() % 12);
      params.ignoreEos = rng() % 2;
      if (r % 2 == 0) {
        seqs.push_back(std::make_unique<Sequence>(id++, prompt(rng, 2 + rng() % 30), params));
        s.add(seqs.back().get());
        continue;
      }
      std::vector<Sequence *> gang;
      for (int k = 0; k < 2 + r % 3 - 1; ++k) {
        seqs.push_back(std::make_unique<Sequence>(id++, prompt(rng, 2 + rng() % 12), params));
        gang.push_back(seqs.back().get());
      }
      s.addGang(gang);
      gangs.push_back(gang);
    }
    for (int guard = 0; !s.isFinished(); ++guard) {
      ASSERT_LT(guard, 2000) << "seed " << seed << ": no progress";
      ScheduledBatch batch = step(s);
      std::set<const Sequence *> in(batch.seqs.begin(), batch.seqs.end());
      for (const std::vector<Sequence *> &gang : gangs) {
        size_t present = 0;
        for (const Sequence *seq : gang)
          present += in.count(seq);
        ASSERT_TRUE(present == 0 || present == gang.size())
            << "seed " << seed << ": " << present << " of " << gang.size() << " in a step";
      }
    }
    for (const std::vector<Sequence *> &gang : gangs)
      for (const Sequence *seq : gang) {
        EXPECT_TRUE(seq->isFinished());
        EXPECT_EQ(seq->numCompletionTokens(), gang.front()->numCompletionTokens())
            << "seed " << seed;
      }
    preemptions += s.numPreemptions();
  }
  EXPECT_GT(preemptions, 0) << "the KV cache never ran short: preemption went untested";
}

TEST(GangScheduling, RefusesGangsThatCanNeverRunTogether) {
  SchedulerConfig cfg;
  cfg.maxNumSeqs = 2;
  cfg.maxNumBatchedTokens = 10;
  cfg.numBlocks = 256;
  Scheduler s(cfg);
  Sequence a(0, std::vector<int32_t>(6, 1)), b(1, std::vector<int32_t>(6, 2)), c(2, {3}), d(3, {4}),
      e(4, {5});
  try {
    s.addGang({&a, &b});
    FAIL() << "12 prompt tokens over a budget of 10 were accepted";
  } catch (const nnsc::InvalidInput &err) {
    EXPECT_STREQ(err.what(), "a request of 2 invokes has 12 prompt tokens, more than "
                             "'max_num_batched_tokens' (10)");
  }
  EXPECT_THROW(s.addGang({&c, &d, &e}), nnsc::InvalidInput);
  EXPECT_TRUE(s.isFinished()) << "a refused gang must leave nothing queued";
}

TEST(GangScheduling, HookEndedRequests) {
  SchedulerConfig cfg;
  cfg.numBlocks = 256;
  Scheduler s(cfg);
  SamplingParams params;
  params.maxTokens = 10;
  params.ignoreEos = true;
  Sequence kept(0, {1, 2, 3}, params), cut(1, {4, 5}, params), other(2, {6, 7}, params);
  s.add(&kept);
  s.add(&cut);
  s.add(&other);
  step(s);
  kept.endAfterStep = FinishReason::Stop;
  cut.endAfterStep = FinishReason::Cut;
  ScheduledBatch batch = s.schedule();
  std::vector<int32_t> tokens;
  for (Sequence *seq : batch.samplingSeqs())
    tokens.push_back(nextToken(seq->tokenIds()));
  std::vector<Sequence *> done = s.postprocess(batch, tokens);
  EXPECT_EQ(done.size(), 2u);
  EXPECT_EQ(kept.finishReason, FinishReason::Stop);
  EXPECT_EQ(kept.numCompletionTokens(), 2) << "finish() keeps the step's token";
  EXPECT_EQ(cut.finishReason, FinishReason::Cut);
  EXPECT_EQ(cut.numCompletionTokens(), 1) << "a cut step's token is dropped";
  EXPECT_FALSE(other.isFinished());
  EXPECT_EQ(s.numRunning(), 1);
}

TEST(GangScheduling, MaxTokensZeroRunsThePromptPassAlone) {
  SchedulerConfig cfg;
  cfg.numBlocks = 256;
  Scheduler s(cfg);
  Sequence probe(0, {1, 2, 3}, SamplingParams{.maxTokens = 0});
  s.add(&probe);
  ScheduledBatch batch = s.schedule();
  ASSERT_EQ(batch.samplingSeqs().size(), 1u) << "the prompt pass samples as any does";
  std::vector<nnsc::Sequence *> done = s.postprocess(batch, std::vector<int32_t>{7});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(probe.finishReason, FinishReason::Length);
  EXPECT_EQ(probe.numCompletionTokens(), 0) << "its token is dropped";
  EXPECT_TRUE(s.isFinished());
  EXPECT_EQ(s.blockManager().numFreeBlocks(), cfg.numBlocks);
}

TEST(GangScheduling, MemberThatEndsAloneIsParkedUntilItsGangEnds) {
  SchedulerConfig cfg;
  cfg.numBlocks = 256;
  Scheduler s(cfg);
  const SamplingParams params{.maxTokens = 4, .ignoreEos = true};
  // `cut` stops in its invoke, `probe` asks for its prompt pass alone; `target` runs on.
  Sequence cut(0, {1, 2, 3}, params), probe(1, {4, 5}, SamplingParams{.maxTokens = 0}),
      target(2, {6, 7, 8, 9}, params);
  s.addGang({&cut, &probe, &target});
  ScheduledBatch prefill = s.schedule();
  ASSERT_EQ(prefill.seqs.size(), 3u);
  cut.endAfterStep = FinishReason::Cut;
  EXPECT_TRUE(s.postprocess(prefill, std::vector<int32_t>{11, 12, 13}).empty())
      << "the gang goes on while a member runs";
  EXPECT_EQ(cut.status, nnsc::SequenceStatus::Parked);
  EXPECT_EQ(probe.status, nnsc::SequenceStatus::Parked);
  EXPECT_TRUE(cut.blockTable.empty() && probe.blockTable.empty()) << "parked members hold no KV";
  EXPECT_EQ(s.numRunning(), 1);
  std::vector<nnsc::Sequence *> done;
  while (!s.isFinished()) {
    ScheduledBatch batch = s.schedule();
    ASSERT_EQ(batch.seqs, std::vector<nnsc::Sequence *>{&target});
    std::vector<int32_t> tokens;
    for (Sequence *seq : batch.samplingSeqs())
      tokens.push_back(nextToken(seq->tokenIds()));
    for (Sequence *seq : s.postprocess(batch, tokens))
      done.push_back(seq);
  }
  EXPECT_EQ(done.size(), 3u) << "parked members finish with their gang";
  EXPECT_EQ(target.numCompletionTokens(), 4);
  EXPECT_EQ(target.finishReason, FinishReason::Length);
  EXPECT_EQ(cut.numCompletionTokens(), 0);
  EXPECT_EQ(cut.finishReason, FinishReason::Cut);
  EXPECT_EQ(probe.numCompletionTokens(), 0);
  EXPECT_EQ(probe.finishReason, FinishReason::Length);
  EXPECT_EQ(s.blockManager().numFreeBlocks(), cfg.numBlocks);
}

TEST(GangScheduling, EveryMemberCutEndsTheGang) {
  SchedulerConfig cfg;
  cfg.numBlocks = 256;
  Scheduler s(cfg);
  const SamplingParams params{.maxTokens = 4, .ignoreEos = true};
  Sequence a(0, {1, 2, 3}, params), b(1, {4, 5}, params);
  s.addGang({&a, &b});
  ScheduledBatch prefill = s.schedule();
  a.endAfterStep = FinishReason::Cut;
  b.endAfterStep = FinishReason::Cut;
  EXPECT_EQ(s.postprocess(prefill, std::vector<int32_t>{11, 12}).size(), 2u);
  EXPECT_TRUE(s.isFinished());
  EXPECT_EQ(a.finishReason, FinishReason::Cut);
  EXPECT_EQ(b.finishReason, FinishReason::Cut);
}

TEST(GangScheduling, ParkedMemberRestartsWithItsPreemptedGang) {
  SchedulerConfig cfg;
  cfg.maxNumSeqs = 4;
  cfg.maxNumBatchedTokens = 64;
  cfg.maxModelLen = 24;
  cfg.numBlocks = 6; // two sequences of 16 tokens need 8: a decode step preempts
  cfg.blockSize = 4;
  Scheduler s(cfg);
  const SamplingParams params{.maxTokens = 12, .ignoreEos = true};
  Sequence other(0, {1, 2, 3, 4}, params), source(1, {5, 6, 7, 8}, SamplingParams{.maxTokens = 0}),
      target(2, {9, 10, 11, 12}, params);
  for (Sequence *seq : {&other, &source, &target})
    seq->restartOnPreemption = true;
  // Admitted last, the gang is what a full cache preempts.
  s.add(&other);
  s.addGang({&source, &target});
  step(s);
  ASSERT_EQ(source.status, nnsc::SequenceStatus::Parked);
  bool restarted = false;
  for (int guard = 0; !s.isFinished(); ++guard) {
    ASSERT_LT(guard, 200) << "no progress";
    ScheduledBatch batch = step(s);
    if (batch.restarted.empty())
      continue;
    restarted = true;
    EXPECT_NE(std::find(batch.restarted.begin(), batch.restarted.end(), &source),
              batch.restarted.end())
        << "the parked member restarts with its gang";
  }
  EXPECT_TRUE(restarted) << "the cache never ran short: the restart went untested";
  EXPECT_GE(source.numRestarts, 1);
  EXPECT_EQ(source.finishReason, FinishReason::Length);
  EXPECT_EQ(source.numCompletionTokens(), 0);
  EXPECT_EQ(target.numCompletionTokens(), 12);
  EXPECT_EQ(other.numCompletionTokens(), 12);
}

} // namespace

//===- SchedulerTest.cpp - Scheduling, chunking, preemption -----*- C++ -*-===//
//
// Driven by the token-per-slot stand-in of SchedulerHarness.h: outputs must equal running
// each request alone.
//
//===----------------------------------------------------------------------===//

#include "SchedulerHarness.h"

#include <string>

namespace {

using nnsc::FinishReason;
using nnsc::SamplingParams;
using nnsc::ScheduledBatch;
using nnsc::Scheduler;
using nnsc::SchedulerConfig;
using nnsc::Sequence;
using nnsc::SequenceStatus;
using namespace nnsc::test;

TEST(Scheduler, TokenBudgetChunksTheLastPrompt) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 25;
  Scheduler scheduler(cfg);
  std::vector<Sequence> seqs;
  for (int i = 0; i < 3; ++i)
    seqs.emplace_back(i, std::vector<int32_t>(10, 5 + i), SamplingParams{.maxTokens = 4});
  for (auto &seq : seqs)
    scheduler.add(&seq);

  ScheduledBatch first = scheduler.schedule();
  ASSERT_TRUE(first.isPrefill);
  ASSERT_EQ(first.seqs.size(), 3u);
  EXPECT_EQ(first.seqs[0]->numScheduledTokens, 10);
  EXPECT_EQ(first.seqs[1]->numScheduledTokens, 10);
  EXPECT_EQ(first.seqs[2]->numScheduledTokens, 5);
  EXPECT_EQ(first.numTokens(), 25);
  EXPECT_EQ(first.samplingSeqs().size(), 2u);
  scheduler.postprocess(first, std::vector<int32_t>{7, 8});
  EXPECT_EQ(seqs[2].numCachedTokens, 5);
  EXPECT_EQ(seqs[2].numTokens(), 10);

  ScheduledBatch second = scheduler.schedule();
  ASSERT_TRUE(second.isPrefill);
  ASSERT_EQ(second.seqs.size(), 1u);
  EXPECT_EQ(second.seqs[0], &seqs[2]);
  EXPECT_EQ(seqs[2].numScheduledTokens, 5);
  scheduler.postprocess(second, std::vector<int32_t>{9});

  ScheduledBatch third = scheduler.schedule();
  EXPECT_FALSE(third.isPrefill);
  EXPECT_EQ(third.seqs.size(), 3u);
  EXPECT_EQ(third.numTokens(), 3);
}

TEST(Scheduler, ChunkedPrefillOfALongPrompt) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 32;
  cfg.blockSize = 16;
  Scheduler scheduler(cfg);
  Sequence seq(0, std::vector<int32_t>(100, 3), SamplingParams{.maxTokens = 2});
  scheduler.add(&seq);
  std::vector<int64_t> chunks;
  while (seq.numCompletionTokens() == 0) {
    ScheduledBatch batch = scheduler.schedule();
    EXPECT_TRUE(batch.isPrefill);
    chunks.push_back(seq.numScheduledTokens);
    std::vector<int32_t> sampled;
    if (seq.samplesThisStep())
      sampled.push_back(11);
    scheduler.postprocess(batch, sampled);
  }
  EXPECT_EQ(chunks, (std::vector<int64_t>{32, 32, 32, 4}));
  EXPECT_EQ(seq.numCachedTokens, 100);
  EXPECT_EQ(seq.completionTokenIds()[0], 11);
}

TEST(Scheduler, PromptsWholeWaitForRoomOrGoAlone) {
  // A prompt whose hooks see prompt positions is never chunked: it waits for a step with room
  // for all of it, and a prompt longer than the budget goes alone.
  SchedulerConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 32;
  cfg.blockSize = 16;
  Scheduler scheduler(cfg);
  Sequence first(0, std::vector<int32_t>(20, 3), SamplingParams{.maxTokens = 1});
  Sequence whole(1, std::vector<int32_t>(20, 4), SamplingParams{.maxTokens = 1});
  Sequence longer(2, std::vector<int32_t>(50, 5), SamplingParams{.maxTokens = 1});
  whole.prefillWhole = longer.prefillWhole = true;
  for (Sequence *seq : {&first, &whole, &longer})
    scheduler.add(seq);

  ScheduledBatch one = scheduler.schedule();
  ASSERT_EQ(one.seqs.size(), 1u);
  EXPECT_EQ(one.seqs[0], &first);
  EXPECT_EQ(first.numScheduledTokens, 20);
  scheduler.postprocess(one, std::vector<int32_t>{9});

  ScheduledBatch two = scheduler.schedule();
  ASSERT_EQ(two.seqs.size(), 1u);
  EXPECT_EQ(two.seqs[0], &whole);
  EXPECT_EQ(whole.numScheduledTokens, 20);
  scheduler.postprocess(two, std::vector<int32_t>{9});

  ScheduledBatch three = scheduler.schedule();
  ASSERT_EQ(three.seqs.size(), 1u);
  EXPECT_EQ(three.seqs[0], &longer);
  EXPECT_EQ(longer.numScheduledTokens, 50);
  EXPECT_EQ(three.numTokens(), 50);
}

TEST(Scheduler, LastPromptTokenAloneIsADecodeStep) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxNumBatchedTokens = 32;
  Scheduler scheduler(cfg);
  Sequence seq(0, std::vector<int32_t>(65, 3), SamplingParams{.maxTokens = 1});
  scheduler.add(&seq);
  for (int i = 0; i < 2; ++i) {
    ScheduledBatch batch = scheduler.schedule();
    EXPECT_TRUE(batch.isPrefill);
    EXPECT_TRUE(batch.samplingSeqs().empty());
    scheduler.postprocess(batch, {});
  }
  ScheduledBatch last = scheduler.schedule();
  EXPECT_FALSE(last.isPrefill);
  EXPECT_EQ(seq.numScheduledTokens, 1);
  EXPECT_TRUE(seq.samplesThisStep());
  std::vector<Sequence *> done = scheduler.postprocess(last, std::vector<int32_t>{4});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(seq.finishReason, FinishReason::Length);
}

TEST(Scheduler, FinishesOnEosStopTokensAndLimits) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxModelLen = 12;
  cfg.numBlocks = 16;
  Scheduler scheduler(cfg);
  Sequence eos(0, {1, 2}, SamplingParams{.maxTokens = 10});
  Sequence ignoring(1, {1, 2}, SamplingParams{.maxTokens = 3, .ignoreEos = true});
  Sequence stop(2, {1, 2}, SamplingParams{.maxTokens = 10, .stopTokenIds = {42}});
  Sequence context(3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, SamplingParams{.maxTokens = 10});
  for (Sequence *seq : {&eos, &ignoring, &stop, &context})
    scheduler.add(seq);

  ScheduledBatch prefill = scheduler.schedule();
  ASSERT_EQ(prefill.seqs.size(), 4u);
  scheduler.postprocess(prefill, std::vector<int32_t>{kEos, kEos, 42, 5});
  EXPECT_EQ(eos.finishReason, FinishReason::Stop);
  EXPECT_EQ(eos.status, SequenceStatus::Finished);
  EXPECT_TRUE(eos.blockTable.empty());
  EXPECT_EQ(stop.finishReason, FinishReason::Stop);
  EXPECT_EQ(stop.completionTokenIds().back(), 42);
  EXPECT_EQ(ignoring.status, SequenceStatus::Running);
  EXPECT_EQ(context.status, SequenceStatus::Running);
  EXPECT_EQ(scheduler.numRunning(), 2);

  ScheduledBatch decode = scheduler.schedule();
  ASSERT_EQ(decode.seqs.size(), 2u);
  std::vector<Sequence *> done = scheduler.postprocess(decode, std::vector<int32_t>{kEos, 6});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], &context); // 12 tokens = max_model_len
  EXPECT_EQ(context.finishReason, FinishReason::Length);

  decode = scheduler.schedule();
  scheduler.postprocess(decode, std::vector<int32_t>{kEos});
  EXPECT_EQ(ignoring.finishReason, FinishReason::Length);
  EXPECT_EQ(ignoring.numCompletionTokens(), 3);
  EXPECT_TRUE(scheduler.isFinished());
  EXPECT_EQ(scheduler.blockManager().numFreeBlocks(), cfg.numBlocks);
}

TEST(Scheduler, PreemptsByRecomputeWhenBlocksRunOut) {
  SchedulerConfig cfg = smallConfig();
  cfg.numBlocks = 6;
  cfg.maxModelLen = 24; // 6 blocks of 4: one sequence always fits alone
  Scheduler scheduler(cfg);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 2; ++i)
    seqs.push_back(std::make_unique<Sequence>(i, std::vector<int32_t>{1 + i, 2, 3, 4},
                                              SamplingParams{.maxTokens = 16, .ignoreEos = true}));
  for (auto &seq : seqs)
    scheduler.add(seq.get());
  TokenCache cache(cfg);
  bool sawPreemption = false;
  while (!scheduler.isFinished()) {
    int64_t before = scheduler.numPreemptions();
    ScheduledBatch batch = scheduler.schedule();
    if (scheduler.numPreemptions() > before && !sawPreemption) {
      sawPreemption = true;
      // The most recently admitted sequence lost its blocks and waits at the front.
      EXPECT_EQ(seqs[1]->status, SequenceStatus::Waiting);
      EXPECT_TRUE(seqs[1]->blockTable.empty());
      EXPECT_EQ(seqs[1]->numCachedTokens, 0);
      EXPECT_EQ(scheduler.numWaiting(), 1);
    }
    scheduler.postprocess(batch, cache.run(batch));
  }
  EXPECT_TRUE(sawPreemption);
  for (auto &seq : seqs) {
    std::vector<int32_t> got(seq->completionTokenIds().begin(), seq->completionTokenIds().end());
    EXPECT_EQ(got, generateAlone(*seq, cfg)) << "sequence " << seq->id();
  }
}

/// A sequence marked restartOnPreemption loses its generated tokens when preempted, is
/// reported in the batch's `restarted` list, and still ends with the tokens of a run alone.
TEST(Scheduler, RestartsMarkedSequencesFromTheirPrompt) {
  SchedulerConfig cfg = smallConfig();
  cfg.numBlocks = 6;
  cfg.maxModelLen = 24;
  Scheduler scheduler(cfg);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 2; ++i) {
    seqs.push_back(std::make_unique<Sequence>(i, std::vector<int32_t>{1 + i, 2, 3, 4},
                                              SamplingParams{.maxTokens = 16, .ignoreEos = true}));
    seqs.back()->restartOnPreemption = true;
    scheduler.add(seqs.back().get());
  }
  TokenCache cache(cfg);
  int64_t restarts = 0;
  while (!scheduler.isFinished()) {
    int64_t before = scheduler.numPreemptions();
    ScheduledBatch batch = scheduler.schedule();
    EXPECT_EQ(int64_t(batch.restarted.size()), scheduler.numPreemptions() - before);
    for (const Sequence *seq : batch.restarted) {
      ++restarts;
      EXPECT_TRUE(seq->blockHashes.empty());
      // Back in this very batch (every other sequence was preempted too) or waiting; either
      // way from its prompt.
      EXPECT_EQ(seq->numCompletionTokens(), 0);
    }
    scheduler.postprocess(batch, cache.run(batch));
  }
  EXPECT_GT(restarts, 0);
  int64_t counted = 0;
  for (auto &seq : seqs) {
    counted += seq->numRestarts;
    std::vector<int32_t> got(seq->completionTokenIds().begin(), seq->completionTokenIds().end());
    EXPECT_EQ(got, generateAlone(*seq, cfg)) << "sequence " << seq->id();
  }
  EXPECT_EQ(counted, restarts);
}

/// A prompt whose pass a hook cut short (FinishReason::Cut) leaves nothing in the prefix
/// cache; one that finished normally does.
TEST(Scheduler, CutPassesAreNotCached) {
  for (FinishReason end : {FinishReason::Cut, FinishReason::Stop}) {
    Scheduler scheduler(smallConfig());
    std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9};
    Sequence first(0, prompt, SamplingParams{.maxTokens = 4, .ignoreEos = true});
    scheduler.add(&first);
    ScheduledBatch batch = scheduler.schedule();
    first.endAfterStep = end;
    TokenCache cache(scheduler.config());
    ASSERT_EQ(scheduler.postprocess(batch, cache.run(batch)).size(), 1u);
    Sequence second(1, prompt, SamplingParams{.maxTokens = 1, .ignoreEos = true});
    scheduler.add(&second);
    scheduler.schedule();
    EXPECT_EQ(second.numCachedTokens, end == FinishReason::Cut ? 0 : 8)
        << (end == FinishReason::Cut ? "cut" : "finished");
  }
}

TEST(Scheduler, RespectsMaxNumSeqs) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxNumSeqs = 2;
  Scheduler scheduler(cfg);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 5; ++i)
    seqs.push_back(std::make_unique<Sequence>(i, std::vector<int32_t>{1, 2, 3},
                                              SamplingParams{.maxTokens = 3}));
  runAll(scheduler, seqs); // checks numRunning() <= maxNumSeqs every step
  for (auto &seq : seqs)
    EXPECT_TRUE(seq->isFinished());
}

/// Random workloads under tight and loose limits give the same outputs as running alone.
TEST(Scheduler, RandomWorkloadsMatchRunningAlone) {
  struct Case {
    const char *name;
    int64_t maxNumSeqs, budget, numBlocks, blockSize;
  };
  for (Case c : {Case{"roomy", 16, 512, 512, 16}, Case{"tight budget", 8, 8, 256, 4},
                 Case{"tiny cache", 8, 64, 40, 4}, Case{"block size 1", 4, 16, 200, 1}}) {
    SchedulerConfig cfg;
    cfg.maxNumSeqs = c.maxNumSeqs;
    cfg.maxNumBatchedTokens = c.budget;
    cfg.numBlocks = c.numBlocks;
    cfg.blockSize = c.blockSize;
    cfg.maxModelLen = 160;
    cfg.eosTokenIds = {kEos};
    Scheduler scheduler(cfg);
    std::mt19937 rng(1234);
    std::vector<int32_t> system = randomTokens(rng, 37); // a shared prefix for cache hits
    std::vector<std::unique_ptr<Sequence>> seqs;
    for (int i = 0; i < 24; ++i) {
      std::vector<int32_t> prompt = i % 2 ? std::vector<int32_t>(system) : std::vector<int32_t>{};
      std::vector<int32_t> tail = randomTokens(rng, 1 + rng() % 60);
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      SamplingParams params{.maxTokens = 1 + static_cast<int64_t>(rng() % 40),
                            .ignoreEos = i % 3 == 0};
      if (i % 5 == 0)
        params.stopTokenIds = {7};
      seqs.push_back(std::make_unique<Sequence>(i, prompt, params, /*cacheSalt=*/i % 4 == 3));
    }
    runAll(scheduler, seqs);
    for (auto &seq : seqs) {
      ASSERT_TRUE(seq->isFinished()) << c.name;
      std::vector<int32_t> got(seq->completionTokenIds().begin(), seq->completionTokenIds().end());
      EXPECT_EQ(got, generateAlone(*seq, cfg)) << c.name << ", sequence " << seq->id();
    }
    EXPECT_EQ(scheduler.blockManager().numFreeBlocks(), cfg.numBlocks) << c.name;
    if (std::string(c.name) == "roomy")
      EXPECT_GT(scheduler.blockManager().numHitTokens(), 0) << c.name;
    if (std::string(c.name) == "tiny cache")
      EXPECT_GT(scheduler.numPreemptions(), 0) << c.name;
  }
}

} // namespace

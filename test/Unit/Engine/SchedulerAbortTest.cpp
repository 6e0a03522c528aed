//===- SchedulerAbortTest.cpp - ending requests between steps ------------===//
//
// Scheduler::abort: a waiting or running sequence (and the rest of its gang) ends at once,
// its blocks go back to the pool, and the others go on to the tokens they get alone.
//
//===----------------------------------------------------------------------===//

#include "SchedulerHarness.h"

using namespace nnsc;
using namespace nnsc::test;

namespace {

std::unique_ptr<Sequence> makeSeq(int64_t id, std::vector<int32_t> prompt, int64_t maxTokens) {
  return std::make_unique<Sequence>(id, std::move(prompt),
                                    SamplingParams{.maxTokens = maxTokens, .ignoreEos = true});
}

TEST(SchedulerAbort, RunningSequenceFreesItsBlocksAndOthersGoOn) {
  SchedulerConfig cfg = smallConfig();
  Scheduler scheduler(cfg);
  TokenCache cache(cfg);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 3; ++i) {
    seqs.push_back(makeSeq(i, {1 + i, 2, 3, 4, 5, 6}, 12));
    scheduler.add(seqs.back().get());
  }
  for (int step = 0; step < 3; ++step) {
    ScheduledBatch batch = scheduler.schedule();
    scheduler.postprocess(batch, cache.run(batch));
  }
  const int64_t freeBefore = scheduler.blockManager().numFreeBlocks();
  const int64_t held = int64_t(seqs[1]->blockTable.size());
  ASSERT_GT(held, 0);
  std::vector<Sequence *> ended = scheduler.abort(*seqs[1]);
  ASSERT_EQ(ended, std::vector<Sequence *>{seqs[1].get()});
  EXPECT_EQ(seqs[1]->status, SequenceStatus::Finished);
  EXPECT_EQ(seqs[1]->finishReason, FinishReason::Abort);
  EXPECT_TRUE(seqs[1]->blockTable.empty());
  EXPECT_EQ(scheduler.blockManager().numFreeBlocks(), freeBefore + held);
  EXPECT_EQ(scheduler.numRunning(), 2);
  EXPECT_TRUE(scheduler.abort(*seqs[1]).empty()) << "aborting twice ends nothing";
  while (!scheduler.isFinished()) {
    ScheduledBatch batch = scheduler.schedule();
    for (const Sequence *seq : batch.seqs)
      EXPECT_NE(seq, seqs[1].get()) << "an aborted sequence was scheduled";
    scheduler.postprocess(batch, cache.run(batch));
  }
  for (int i : {0, 2}) {
    std::vector<int32_t> got(seqs[i]->completionTokenIds().begin(),
                             seqs[i]->completionTokenIds().end());
    EXPECT_EQ(got, generateAlone(*seqs[i], cfg)) << "sequence " << i;
  }
  EXPECT_EQ(scheduler.blockManager().numFreeBlocks(), cfg.numBlocks);
}

TEST(SchedulerAbort, WaitingSequenceLeavesTheQueue) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxNumSeqs = 1;
  cfg.maxNumBatchedTokens = 8;
  Scheduler scheduler(cfg);
  auto first = makeSeq(0, {1, 2, 3}, 4);
  auto second = makeSeq(1, {4, 5, 6}, 4);
  scheduler.add(first.get());
  scheduler.add(second.get());
  ScheduledBatch batch = scheduler.schedule();
  ASSERT_EQ(scheduler.numWaiting(), 1);
  EXPECT_EQ(scheduler.abort(*second).size(), 1u);
  EXPECT_EQ(scheduler.numWaiting(), 0);
  TokenCache cache(cfg);
  scheduler.postprocess(batch, cache.run(batch));
  while (!scheduler.isFinished()) {
    batch = scheduler.schedule();
    scheduler.postprocess(batch, cache.run(batch));
  }
  EXPECT_EQ(first->finishReason, FinishReason::Length);
  EXPECT_EQ(second->finishReason, FinishReason::Abort);
}

TEST(SchedulerAbort, AGangEndsWhole) {
  SchedulerConfig cfg = smallConfig();
  Scheduler scheduler(cfg);
  TokenCache cache(cfg);
  auto a = makeSeq(0, {1, 2, 3}, 8);
  auto b = makeSeq(1, {4, 5, 6, 7}, 8);
  auto other = makeSeq(2, {8, 9}, 8);
  scheduler.addGang({a.get(), b.get()});
  scheduler.add(other.get());
  ScheduledBatch batch = scheduler.schedule();
  scheduler.postprocess(batch, cache.run(batch));
  std::vector<Sequence *> ended = scheduler.abort(*b);
  EXPECT_EQ(ended.size(), 2u);
  EXPECT_EQ(a->finishReason, FinishReason::Abort);
  EXPECT_EQ(b->finishReason, FinishReason::Abort);
  EXPECT_EQ(scheduler.numRunning(), 1);
  while (!scheduler.isFinished()) {
    batch = scheduler.schedule();
    scheduler.postprocess(batch, cache.run(batch));
  }
  std::vector<int32_t> got(other->completionTokenIds().begin(), other->completionTokenIds().end());
  EXPECT_EQ(got, generateAlone(*other, cfg));
}

} // namespace

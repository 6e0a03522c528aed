//===- SchedulerValidationTest.cpp - Impossible configs, bad requests -*- C++ -*-===//
//
// What the scheduler and sampling parameters refuse, and the messages they refuse it with.
//
//===----------------------------------------------------------------------===//

#include "SchedulerHarness.h"

#include "nnsc/Runtime/Support/Error.h"

#include <cmath>
#include <string>

namespace {

using nnsc::SamplingParams;
using nnsc::ScheduledBatch;
using nnsc::Scheduler;
using nnsc::SchedulerConfig;
using nnsc::Sequence;
using namespace nnsc::test;

TEST(Scheduler, RejectsImpossibleConfig) {
  SchedulerConfig cfg = smallConfig();
  cfg.numBlocks = 10;
  cfg.maxModelLen = 41; // needs 11 blocks of 4
  try {
    Scheduler scheduler(cfg);
    FAIL() << "expected a KV cache size error";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold one sequence of 'max_model_len' 41"),
              std::string::npos)
        << e.what();
  }
  cfg = smallConfig();
  cfg.maxNumBatchedTokens = 4;
  EXPECT_THROW(Scheduler{cfg}, nnsc::InvalidInput);
  cfg = smallConfig();
  cfg.maxNumSeqs = 0;
  EXPECT_THROW(Scheduler{cfg}, nnsc::InvalidInput);
}

TEST(Scheduler, RejectsBadRequests) {
  SchedulerConfig cfg = smallConfig();
  cfg.maxModelLen = 8;
  Scheduler scheduler(cfg);
  Sequence tooLong(0, std::vector<int32_t>(9, 1));
  try {
    scheduler.add(&tooLong);
    FAIL() << "expected a prompt length error";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("prompt of 9 tokens is longer than the context"),
              std::string::npos)
        << e.what();
  }
  Sequence badParams(1, {1, 2}, SamplingParams{.temperature = -1.0f});
  EXPECT_THROW(scheduler.add(&badParams), nnsc::InvalidInput);

  Sequence ok(2, {1, 2});
  scheduler.add(&ok);
  EXPECT_THROW(scheduler.add(&ok), nnsc::InvalidInput);
  ScheduledBatch batch = scheduler.schedule();
  try {
    scheduler.postprocess(batch, {});
    FAIL() << "expected a sampled-count error";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("got 0 sampled tokens for 1 sequences"), std::string::npos)
        << e.what();
  }
}

TEST(SamplingParams, RejectsImpossibleValues) {
  auto message = [](const SamplingParams &p) -> std::string {
    try {
      p.validate();
    } catch (const nnsc::InvalidInput &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(SamplingParams{}), "");
  EXPECT_EQ(message(SamplingParams{.temperature = 0.0f, .topK = 5, .topP = 0.5f}), "");
  EXPECT_NE(message(SamplingParams{.temperature = -0.5f}).find("'temperature' must be >= 0"),
            std::string::npos);
  EXPECT_NE(message(SamplingParams{.temperature = NAN}).find("'temperature'"), std::string::npos);
  EXPECT_NE(message(SamplingParams{.topP = 0.0f}).find("'top_p' must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(message(SamplingParams{.topP = 1.5f}).find("'top_p' must be in (0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(message(SamplingParams{.topK = -1}).find("'top_k' must be >= 0"), std::string::npos);
  EXPECT_EQ(message(SamplingParams{.maxTokens = 0}), "") << "0 is the prompt pass alone";
  EXPECT_NE(message(SamplingParams{.maxTokens = -1}).find("'max_tokens' must be >= 0"),
            std::string::npos);
  EXPECT_NE(message(SamplingParams{.stopTokenIds = {3, -2}}).find("'stop_token_ids'"),
            std::string::npos);
}

} // namespace

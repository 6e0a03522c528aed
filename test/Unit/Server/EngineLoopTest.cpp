//===- EngineLoopTest.cpp - the engine thread and its request streams -----===//
//
// On a tiny random Llama: requests submitted from several threads get the tokens they get
// alone; an aborted request ends with "abort" and gives its KV blocks back; a refused one
// ends with the engine's message; LLMEngine::abortRequest releases a request's hooks without
// firing its result phase.
//
//===----------------------------------------------------------------------===//

#include "Backend/TinyModel.h"

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Server/EngineLoop.h"

#include <gtest/gtest.h>

#include <thread>

using namespace nnsc;
using namespace nnsc::server;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<DeviceBackend> tinyBackend() {
  static std::shared_ptr<CausalLM> model =
      std::make_shared<CausalLM>(test::tinyWeights(), CpuKernels::get());
  return makeCpuBackend(model);
}

SchedulerConfig tinyConfig() {
  SchedulerConfig config;
  config.numBlocks = 64;
  config.blockSize = 16;
  config.maxModelLen = 256;
  return config;
}

SamplingParams greedy(int64_t maxTokens) {
  SamplingParams p;
  p.temperature = 0;
  p.maxTokens = maxTokens;
  p.ignoreEos = true;
  return p;
}

/// Everything a stream produced until it ended: tokens of choice 0, finish reason, error.
struct Outcome {
  std::vector<int32_t> tokens;
  std::optional<std::string> finish;
  std::optional<std::string> error;
};

Outcome drain(RequestStream &stream) {
  Outcome out;
  while (true) {
    std::optional<StreamUpdate> u = stream.take(100ms);
    if (!u)
      continue;
    for (const ChoiceDelta &d : u->choices) {
      out.tokens.insert(out.tokens.end(), d.tokens.begin(), d.tokens.end());
      if (d.finishReason)
        out.finish = d.finishReason;
    }
    if (u->error)
      out.error = u->error;
    if (u->done)
      return out;
  }
}

std::shared_ptr<RequestStream> plainStream() {
  return std::make_shared<RequestStream>(RequestStream::Config{});
}

EngineLoop::Admit admitPlain(std::vector<int32_t> prompt, SamplingParams params) {
  return [prompt, params](LLMEngine &engine) {
    return std::vector<int64_t>{engine.addRequest(prompt, params)};
  };
}

TEST(EngineLoop, ConcurrentRequestsGetTheirTokensAlone) {
  const std::vector<std::vector<int32_t>> prompts = {{3, 17, 42}, {5, 9, 60, 11, 2}, {8, 33}};
  std::vector<std::vector<int32_t>> alone;
  for (const auto &prompt : prompts) {
    LLMEngine engine(tinyBackend(), tinyConfig());
    engine.addRequest(prompt, greedy(6));
    alone.push_back(engine.runToCompletion().front().completionTokens);
  }
  Metrics metrics;
  EngineLoop loop(std::make_unique<LLMEngine>(tinyBackend(), tinyConfig()), metrics);
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i) {
    streams.push_back(plainStream());
    clients.emplace_back([&, i] { loop.submit(streams[i], admitPlain(prompts[i], greedy(6))); });
  }
  for (std::thread &t : clients)
    t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    Outcome out = drain(*streams[i]);
    EXPECT_EQ(out.tokens, alone[i]) << "request " << i;
    EXPECT_EQ(out.finish, "length");
    EXPECT_EQ(streams[i]->usage(), std::make_pair(int64_t(prompts[i].size()), int64_t(6)));
  }
}

TEST(EngineLoop, AbortEndsTheRequestAndFreesItsBlocks) {
  Metrics metrics;
  EngineLoop loop(std::make_unique<LLMEngine>(tinyBackend(), tinyConfig()), metrics);
  auto stream = plainStream();
  loop.submit(stream, admitPlain({1, 2, 3, 4}, greedy(200)));
  size_t seen = 0;
  while (seen < 3)
    if (std::optional<StreamUpdate> u = stream->take(100ms))
      for (const ChoiceDelta &d : u->choices)
        seen += d.tokens.size();
  EXPECT_GT(metrics.gauges().kvBlocksUsed, 0);
  loop.abort(stream);
  Outcome out = drain(*stream);
  EXPECT_EQ(out.finish, "abort");
  EXPECT_LT(out.tokens.size(), 200u);
  for (int i = 0; i < 50 && metrics.gauges().kvBlocksUsed != 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(metrics.gauges().kvBlocksUsed, 0);
  EXPECT_EQ(metrics.gauges().running, 0);
  // The engine goes on.
  auto next = plainStream();
  loop.submit(next, admitPlain({1, 2, 3, 4}, greedy(2)));
  EXPECT_EQ(drain(*next).tokens.size(), 2u);
}

TEST(EngineLoop, ARefusedRequestEndsWithTheEnginesMessage) {
  Metrics metrics;
  EngineLoop loop(std::make_unique<LLMEngine>(tinyBackend(), tinyConfig()), metrics);
  auto stream = plainStream();
  loop.submit(stream, admitPlain(std::vector<int32_t>(300, 1), greedy(2)));
  Outcome out = drain(*stream);
  ASSERT_TRUE(out.error);
  EXPECT_NE(out.error->find("longer than the context"), std::string::npos) << *out.error;
  EXPECT_EQ(loop.numQueued(), 0);
}

/// Counts what the engine tells it.
class CountingHook : public SiteHook {
public:
  void run(int, torch::Tensor &, std::span<const TokenGroup> groups) override {
    runs += int(groups.size());
  }
  void release(int64_t) override { ++releases; }
  int runs = 0;
  int releases = 0;
};

TEST(LLMEngineAbort, ReleasesHooksWithoutTheResultPhase) {
  std::shared_ptr<DeviceBackend> backend = tinyBackend();
  LLMEngine engine(backend, tinyConfig());
  auto samples = std::make_shared<CountingHook>();
  auto result = std::make_shared<CountingHook>();
  auto table = std::make_shared<HookTable>(backend->architecture());
  table->bind("samples", samples);
  table->bind("result", result);
  int64_t id = engine.addRequest({1, 2, 3}, greedy(50), table);
  engine.step();
  engine.step();
  EXPECT_TRUE(engine.abortRequest(id));
  EXPECT_FALSE(engine.abortRequest(id));
  EXPECT_TRUE(engine.isFinished());
  std::vector<RequestResult> done = engine.takeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].finishReason, FinishReason::Abort);
  EXPECT_EQ(done[0].completionTokens.size(), 2u);
  EXPECT_EQ(samples->releases, 1);
  EXPECT_EQ(result->runs, 0) << "an aborted request fired its result phase";
  EXPECT_EQ(engine.getScheduler().blockManager().numFreeBlocks(), tinyConfig().numBlocks);
}

TEST(LLMEngineAbort, AFinishedRequestReleasesItsHooksOnce) {
  std::shared_ptr<DeviceBackend> backend = tinyBackend();
  LLMEngine engine(backend, tinyConfig());
  auto hook = std::make_shared<CountingHook>();
  auto table = std::make_shared<HookTable>(backend->architecture());
  table->bind("samples", hook);
  engine.addRequest({1, 2, 3}, greedy(3), table);
  engine.runToCompletion();
  EXPECT_EQ(hook->releases, 1);
}

} // namespace

//===- ModelBackendTest.cpp - the backend interface on the CPU ------------===//
//
// The checks every backend inherits (no cache, prefill/decode mismatch), the engine fitting
// its scheduler to declared capabilities, and the CPU backend's decode step against a fresh
// prefill of the same tokens through the engine.
//
//===----------------------------------------------------------------------===//

#include "ErrorMessage.h"
#include "TinyModel.h"

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/CudaBackendLoader.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"

#include <gtest/gtest.h>

using namespace nnsc;

namespace {

using nnsc::test::errorOf;

std::shared_ptr<DeviceBackend> tinyBackend() {
  return makeCpuBackend(std::make_shared<CausalLM>(test::tinyWeights(), CpuKernels::get()));
}

/// Metadata of one step over one sequence at positions [cached, cached + queries) whose
/// blocks are 0, 1, ... of 16 tokens.
AttentionMetadata oneSequence(int64_t cached, int64_t queries, bool prefill) {
  Sequence seq(0, std::vector<int32_t>(size_t(cached + queries), 1), SamplingParams{});
  seq.numCachedTokens = cached;
  seq.numScheduledTokens = queries;
  for (int32_t b = 0; b * 16 < cached + queries; ++b)
    seq.blockTable.push_back(b);
  ScheduledBatch batch;
  batch.isPrefill = prefill;
  batch.seqs.push_back(&seq);
  return AttentionMetadata::fromBatch(batch, 16);
}

TEST(ModelBackend, RefusesStepsItCannotRun) {
  std::shared_ptr<DeviceBackend> backend = tinyBackend();
  torch::Tensor tokens = torch::ones({3}, torch::kInt64);
  AttentionMetadata prefill = oneSequence(0, 3, true);
  EXPECT_EQ(errorOf([&] { backend->prefillForward(tokens, prefill, nullptr); }),
            "prefillForward: no KV cache (call allocateKVCache first)");
  EXPECT_EQ(errorOf([&] { backend->allocateKVCache(0, 16); }),
            "allocateKVCache: the number of blocks and the block size must be positive, got 0 "
            "blocks of 16 tokens");
  backend->allocateKVCache(4, 16);
  EXPECT_EQ(errorOf([&] { backend->decodeForward(tokens, prefill, nullptr); }),
            "decodeForward: the metadata describes a prefill step");
  AttentionMetadata decode = oneSequence(3, 1, false);
  EXPECT_EQ(errorOf([&] { backend->prefillForward(tokens.narrow(0, 0, 1), decode, nullptr); }),
            "prefillForward: the metadata describes a decode step");
  EXPECT_EQ(errorOf([&] { backend->decodeForward(tokens, decode, nullptr); }),
            "decodeForward: 3 tokens but 1 positions");
  EXPECT_EQ(errorOf([&] { backend->prefillForward(tokens.to(torch::kInt32), prefill, nullptr); }),
            "prefillForward: tokens must be a [tokens] int64 CPU tensor, got [3] Int on cpu");
  EXPECT_EQ(backend->prefillForward(tokens, prefill, nullptr).sizes(),
            (std::vector<int64_t>{1, 96}));
}

TEST(ModelBackend, EngineFitsTheSchedulerToCapabilities) {
  SchedulerConfig config;
  config.maxNumSeqs = 64;
  BackendCapabilities caps;
  caps.prefixCaching = false;
  caps.maxNumSeqs = 8;
  SchedulerConfig fitted = fitToBackend(config, caps);
  EXPECT_FALSE(fitted.enablePrefixCaching);
  EXPECT_EQ(fitted.maxNumSeqs, 8);
  caps.prefixCaching = true;
  caps.maxNumSeqs = 0;
  fitted = fitToBackend(config, caps);
  EXPECT_TRUE(fitted.enablePrefixCaching);
  EXPECT_EQ(fitted.maxNumSeqs, 64);

  BackendCapabilities cpu = tinyBackend()->capabilities();
  EXPECT_TRUE(cpu.device.is_cpu());
  EXPECT_TRUE(cpu.prefixCaching);
  EXPECT_TRUE(cpu.bundleKernels);
}

TEST(ModelBackend, DecodeStepEqualsAFreshPrefill) {
  std::shared_ptr<DeviceBackend> backend = tinyBackend();
  SchedulerConfig config;
  config.numBlocks = 16;
  config.blockSize = 16;
  config.maxModelLen = 128;
  LLMEngine engine(backend, config);
  const schema::Architecture &arch = backend->architecture();
  std::map<int64_t, std::vector<torch::Tensor>> logits;
  auto table = std::make_shared<HookTable>(arch);
  table->bind("logits",
              makeSiteHook([&](int, torch::Tensor &value, std::span<const TokenGroup> groups) {
                for (const TokenGroup &g : groups)
                  logits[g.request].push_back(value.narrow(0, g.tokenStart, 1).clone());
              }));
  SamplingParams params;
  params.temperature = 0;
  params.maxTokens = 3;
  const std::vector<int32_t> prompt = {3,  17, 42, 5, 9,  60, 11, 2,  8,
                                       33, 70, 1,  4, 19, 27, 50, 12, 6};
  int64_t first = engine.addRequest(prompt, params, table);
  std::vector<RequestResult> results = engine.runToCompletion();
  ASSERT_EQ(results[0].completionTokens.size(), 3u);
  // The prompt plus the first two sampled tokens, prefilled at once: its last logits are the
  // third step's (a decode step attending to the cache the first two steps wrote).
  std::vector<int32_t> longer = prompt;
  longer.push_back(results[0].completionTokens[0]);
  longer.push_back(results[0].completionTokens[1]);
  params.maxTokens = 1;
  int64_t second = engine.addRequest(longer, params, table);
  engine.runToCompletion();
  torch::Tensor decoded = logits[first].at(2), prefilled = logits[second].at(0);
  EXPECT_TRUE(torch::allclose(decoded, prefilled, 1e-4, 1e-4))
      << "max diff " << (decoded - prefilled).abs().max().item<float>();
}

TEST(ModelBackend, CudaBackendLoaderSaysWhatIsMissing) {
  try {
    loadCudaBackend(test::tinyWeights());
  } catch (const std::runtime_error &e) {
    const std::string message = e.what();
    if (!cudaBackendCompiled())
      EXPECT_NE(message.find("this build has no CUDA backend"), std::string::npos) << message;
    else
      EXPECT_NE(message.find("no CUDA device is present"), std::string::npos) << message;
    return;
  }
  // A machine with a GPU gets a backend; the GPU tests (CudaBackendTest) cover it.
  EXPECT_TRUE(cudaBackendCompiled());
}

} // namespace

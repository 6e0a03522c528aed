//===- DroppedWeightsTest.cpp - a model without its widened projections ---===//
//
// The bundled SmolLM2 loaded in fp32 with its GGUF blocks drops the widened copies of its
// layer projections (CausalLM::dropWidenedProjections): decode runs on the blocks, longer
// products on oneDNN's copy packed from the widened weights at load, and a module call on a
// row range of a fused projection on a copy packed from the blocks. Against the same file
// loaded without blocks (every product on the widened weights): the same greedy tokens, and
// the module calls within fp32 summation order.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace nnsc;

namespace {

std::shared_ptr<const CausalLM> load(bool keepBlocks) {
  const std::string path = NNSC_DEFAULT_MODEL;
  return std::make_shared<const CausalLM>(ModelWeights::load(path, torch::kFloat32, {}, keepBlocks),
                                          CpuKernels::get());
}

std::vector<RequestResult> generate(std::shared_ptr<const CausalLM> model) {
  SchedulerConfig config;
  config.numBlocks = 64;
  config.maxModelLen = 256;
  LLMEngine engine(std::move(model), config);
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.maxTokens = 8;
  greedy.ignoreEos = true;
  // 30 prompt tokens: a prefill over every decode row limit (oneDNN on the packed copy).
  std::vector<int32_t> longPrompt;
  for (int32_t i = 0; i < 30; ++i)
    longPrompt.push_back(1000 + 37 * i);
  engine.addRequest(longPrompt, greedy);
  engine.addRequest({504, 3575, 282, 4649, 314}, greedy);
  return engine.runToCompletion();
}

TEST(DroppedWeights, SameTokensAndModuleCallsAsTheWidenedModel) {
  ASSERT_TRUE(std::filesystem::exists(NNSC_DEFAULT_MODEL))
      << NNSC_DEFAULT_MODEL << " is missing: run scripts/setup";
  std::shared_ptr<const CausalLM> dropped = load(/*keepBlocks=*/true);
  if (!dropped->widenedProjectionsDropped())
    GTEST_SKIP() << "this CPU keeps the widened projections (no oneDNN or no quantized "
                    "kernels, or NNSC_QUANT_DECODE below 16 rows)";
  std::shared_ptr<const CausalLM> widened = load(/*keepBlocks=*/false);
  ASSERT_FALSE(widened->widenedProjectionsDropped());

  const std::vector<RequestResult> got = generate(dropped), want = generate(widened);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].completionTokens, want[i].completionTokens) << "request " << i;

  // Row ranges of the fused projections (q_proj, up_proj) and a whole one (down_proj) as a
  // trace's module call runs them, over every decode row limit.
  const schema::Architecture &arch = dropped->architecture();
  torch::manual_seed(3);
  for (const char *path : {"model.layers.2.self_attn.q_proj", "model.layers.5.mlp.up_proj",
                           "model.layers.9.mlp.down_proj", "model.layers.4.mlp"}) {
    const int module = arch.findModule(path);
    ASSERT_GE(module, 0) << path;
    const int64_t width = std::string(path).ends_with("down_proj") ? dropped->config().intermediate
                                                                   : dropped->config().hidden;
    const torch::Tensor x = torch::randn({24, width});
    const torch::Tensor a = dropped->applyModule(module, x), b = widened->applyModule(module, x);
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5))
        << path << ": largest difference " << (a - b).abs().max().item<double>();
  }
}

} // namespace

//===- DroppedWeightsTest.cpp - a model without its widened projections ---===//
//
// The bundled SmolLM2 loaded with its GGUF blocks and no widened copy of what they serve
// (ProjectionForms::BlocksAndPacked): decode runs on the blocks, longer products on oneDNN's
// copies packed from them (here on first use: no backend calls packWeights), a module call on
// a row range of a fused projection on a copy of its own, the tied embedding's rows are
// widened from the lm_head's blocks, and so is the lm_head's packed copy. Against the same
// file loaded without blocks (every product on the widened weights): in fp32 the same greedy
// tokens; module calls over the quantized path's rows within fp32 summation order, and in
// bf16 within its rounding.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Layers/QuantizedLinear.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace nnsc;

namespace {

std::shared_ptr<const CausalLM> load(torch::ScalarType dtype, ProjectionForms forms) {
  const std::string path = NNSC_DEFAULT_MODEL;
  return std::make_shared<const CausalLM>(ModelWeights::load(path, dtype, {}, forms),
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

class DroppedWeights : public ::testing::TestWithParam<torch::ScalarType> {};

TEST_P(DroppedWeights, SameTokensAndModuleCallsAsTheWidenedModel) {
  ASSERT_TRUE(std::filesystem::exists(NNSC_DEFAULT_MODEL))
      << NNSC_DEFAULT_MODEL << " is missing: run scripts/setup";
  const torch::ScalarType dtype = GetParam();
  std::shared_ptr<const CausalLM> dropped = load(dtype, ProjectionForms::BlocksAndPacked);
  if (!dropped->widenedProjectionsDropped())
    GTEST_SKIP() << "the model keeps its widened projections here, so there is nothing to "
                    "compare: oneDNN does not serve this CPU (it needs AVX-512 BW/VL/DQ) or this "
                    "build (NNSC_GEMM=libtorch), or the CPU lacks the quantized kernels' "
                    "AVX2/FMA/F16C";
  std::shared_ptr<const CausalLM> widened = load(dtype, ProjectionForms::Widened);
  ASSERT_FALSE(widened->widenedProjectionsDropped());

  // In bf16 the widened model decodes with weights rounded to bf16, the other on the blocks.
  if (dtype == torch::kFloat32) {
    const std::vector<RequestResult> got = generate(dropped), want = generate(widened);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].completionTokens, want[i].completionTokens) << "request " << i;
  }

  // Row ranges of the fused projections (q_proj, up_proj), a whole one (down_proj) and the
  // lm_head as a trace's module call runs them, over the quantized path's row limit (at or
  // under it both models run the blocks).
  const schema::Architecture &arch = dropped->architecture();
  const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 2e-2;
  torch::manual_seed(3);
  for (int64_t rows : {20, 32}) {
    if (rows <= quantDecodeMaxRows(dtype))
      continue;
    for (const char *path : {"model.layers.2.self_attn.q_proj", "model.layers.5.mlp.up_proj",
                             "model.layers.9.mlp.down_proj", "model.layers.4.mlp", "lm_head"}) {
      const int module = arch.findModule(path);
      ASSERT_GE(module, 0) << path;
      const int64_t width = std::string(path).ends_with("down_proj")
                                ? dropped->config().intermediate
                                : dropped->config().hidden;
      const torch::Tensor x = torch::randn({rows, width}).to(dtype);
      const torch::Tensor a = dropped->applyModule(module, x).to(torch::kFloat32),
                          b = widened->applyModule(module, x).to(torch::kFloat32);
      EXPECT_TRUE(torch::allclose(a, b, tolerance, tolerance))
          << path << " at " << rows << " rows: largest difference "
          << (a - b).abs().max().item<double>();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DroppedWeights,
                         ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const auto &info) {
                           return info.param == torch::kFloat32 ? "F32" : "BF16";
                         });

} // namespace

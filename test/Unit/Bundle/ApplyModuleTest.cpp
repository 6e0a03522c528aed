//===- ApplyModuleTest.cpp - call_module's modules vs the forward pass ----===//
//
// CausalLM::applyModule (what a bundle's rt->call_module runs) on a random tiny model: for
// every callable module kind, applying the module to the value its input site held in a
// forward pass gives the value its output site held, bit for bit: module calls run the forward
// pass's kernels.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Hooks/HookTable.h"

#include "Support/RandomSource.h"
#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

using namespace nnsc;

namespace {

std::shared_ptr<CausalLM> tinyModel() {
  torch::manual_seed(0);
  schema::ModelConfig c;
  c.hidden = 32;
  c.intermediate = 48;
  c.layers = 2;
  c.heads = 4;
  c.kvHeads = 2;
  c.headDim = 8;
  c.vocab = 64;
  c.maxPositions = 128;
  test::RandomSource source;
  return std::make_shared<CausalLM>(assembleWeights(c, source, torch::kFloat32, {}),
                                    CpuKernels::get());
}

TEST(ApplyModule, EqualsTheForwardPass) {
  std::shared_ptr<CausalLM> model = tinyModel();
  const schema::Architecture &arch = model->architecture();
  std::map<int, torch::Tensor> values;
  auto table = std::make_shared<HookTable>(arch);
  auto capture =
      makeSiteHook([&](int site, torch::Tensor &value, std::span<const TokenGroup> groups) {
        if (!values.count(site))
          values[site] = value.narrow(0, groups[0].tokenStart, groups[0].tokenCount).clone();
      });
  const std::vector<std::string> modules = {"model.norm",
                                            "lm_head",
                                            "model.layers.1.input_layernorm",
                                            "model.layers.1.post_attention_layernorm",
                                            "model.layers.1.self_attn.q_proj",
                                            "model.layers.1.self_attn.k_proj",
                                            "model.layers.1.self_attn.v_proj",
                                            "model.layers.1.self_attn.o_proj",
                                            "model.layers.0.mlp",
                                            "model.layers.0.mlp.gate_proj",
                                            "model.layers.0.mlp.up_proj",
                                            "model.layers.0.mlp.act_fn",
                                            "model.layers.0.mlp.down_proj"};
  for (const std::string &path : modules) {
    const schema::Module &m = arch.modules()[size_t(arch.findModule(path))];
    table->bind(m.inputSite, capture);
    table->bind(m.outputSite, capture);
  }
  SchedulerConfig config;
  config.numBlocks = 16;
  config.blockSize = 16;
  config.maxModelLen = 64;
  LLMEngine engine(model, config);
  SamplingParams params;
  params.temperature = 0;
  params.maxTokens = 1;
  engine.addRequest({1, 5, 9, 3, 7}, params, table);
  engine.runToCompletion();
  for (const std::string &path : modules) {
    int index = arch.findModule(path);
    const schema::Module &m = arch.modules()[size_t(index)];
    ASSERT_TRUE(values.count(m.inputSite) && values.count(m.outputSite)) << path;
    torch::Tensor got = model->applyModule(index, values[m.inputSite]);
    torch::Tensor want = values[m.outputSite];
    EXPECT_TRUE(torch::equal(got, want))
        << path << ": max diff " << (got - want).abs().max().item<float>();
  }
}

TEST(ApplyModule, RefusesWhatItCannotApply) {
  std::shared_ptr<CausalLM> model = tinyModel();
  const schema::Architecture &arch = model->architecture();
  auto message = [&](const std::string &path, int64_t width) {
    try {
      model->applyModule(arch.findModule(path), torch::zeros({2, width}));
    } catch (const nnsc::InvalidInput &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("model.layers.0.mlp.down_proj", 32),
            "module 'model.layers.0.mlp.down_proj' takes width 48, got 32");
  EXPECT_EQ(message("model.norm", 31), "module 'model.norm' takes width 32, got 31");
  EXPECT_EQ(message("model.layers.0.self_attn", 32),
            "module 'model.layers.0.self_attn' (LlamaAttention) cannot be called from a bundle");
  EXPECT_THROW(model->applyModule(-1, torch::zeros({1, 32})), nnsc::InvalidInput);
}

} // namespace

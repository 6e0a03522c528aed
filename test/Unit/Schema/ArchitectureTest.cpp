//===- ArchitectureTest.cpp - module tree and sites -------------*- C++ -*-===//
//
// Structural properties only; the firing order is checked against real transformers hooks in
// test/Runtime/Schema/site-order.test.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Schema/Architecture.h"

#include <gtest/gtest.h>

using namespace nnsc::schema;

namespace {

ModelConfig tinyConfig(ArchKind arch) {
  ModelConfig c;
  c.arch = arch;
  c.hidden = 64;
  c.intermediate = 96;
  c.layers = 3;
  c.heads = 4;
  c.kvHeads = 2;
  c.headDim = 16;
  c.vocab = 500;
  c.qkNorm = arch == ArchKind::Qwen3;
  return c;
}

TEST(Architecture, SitesAreOrderedAndIndexed) {
  Architecture arch(tinyConfig(ArchKind::Llama));
  const auto &sites = arch.sites();
  for (size_t i = 0; i < sites.size(); ++i) {
    EXPECT_EQ(sites[i].order, int(i));
    EXPECT_EQ(arch.findSite(sites[i].path), int(i)) << sites[i].path;
  }
  EXPECT_LT(arch.findSite("model.layers.0.output"), arch.findSite("model.layers.1.input"));
  EXPECT_LT(arch.findSite("model.layers.2.mlp.down_proj.output"),
            arch.findSite("model.layers.2.output"));
  EXPECT_EQ(sites.back().path, "result");
  EXPECT_EQ(arch.findSite("model.layers.3.output"), -1);
}

TEST(Architecture, ShapesUseModelDimensions) {
  Architecture arch(tinyConfig(ArchKind::Qwen3));
  auto shape = [&](const char *path) { return arch.sites()[arch.findSite(path)].shape; };
  EXPECT_EQ(shape("model.layers.1.self_attn.k_proj.output"), (std::vector<int64_t>{kTokens, 32}));
  EXPECT_EQ(shape("model.layers.1.self_attn.q_norm.output"),
            (std::vector<int64_t>{kTokens, 4, 16}));
  EXPECT_EQ(shape("model.layers.1.mlp.act_fn.output"), (std::vector<int64_t>{kTokens, 96}));
  EXPECT_EQ(shape("lm_head.output"), (std::vector<int64_t>{kTokens, 500}));
  EXPECT_EQ(shape("logits"), (std::vector<int64_t>{500}));
  EXPECT_TRUE(shape("samples").empty());
}

TEST(Architecture, ModulesAndAliases) {
  Architecture arch(tinyConfig(ArchKind::Qwen2));
  int mlp = arch.findModule("model.layers.2.mlp");
  ASSERT_GE(mlp, 0);
  EXPECT_EQ(arch.modules()[mlp].type, "Qwen2MLP");
  EXPECT_TRUE(arch.modules()[mlp].callable);
  EXPECT_EQ(arch.modules()[mlp].layer, 2);
  EXPECT_EQ(arch.findModule("model.layers.2.self_attn.q_norm"), -1) << "Qwen2 has no q_norm";
  EXPECT_EQ(Architecture::expandAlias("layers"), "model.layers");
  EXPECT_EQ(Architecture::expandAlias("embed"), "model.embed_tokens");
  EXPECT_FALSE(Architecture::expandAlias("mlp"));
  EXPECT_FALSE(arch.sites()[arch.findSite("result")].writable);
}

} // namespace

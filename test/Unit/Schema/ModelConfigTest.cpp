//===- ModelConfigTest.cpp - config.json parsing ----------------*- C++ -*-===//

#include "nnsc/Schema/ModelConfig.h"

#include <gtest/gtest.h>

using namespace nnsc::schema;

namespace {

TEST(ModelConfig, Qwen3WithRopeParameters) {
  std::string error;
  auto config = ModelConfig::fromHFConfigJson(R"({
    "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 32, "vocab_size": 1000, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
    "tie_word_embeddings": true})",
                                              error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->arch, ArchKind::Qwen3);
  EXPECT_EQ(config->headDim, 32);
  EXPECT_TRUE(config->qkNorm);
  EXPECT_FALSE(config->qkvBias);
  EXPECT_TRUE(config->tiedEmbeddings);
  EXPECT_DOUBLE_EQ(config->ropeTheta, 1e6);
}

TEST(ModelConfig, Llama3RopeScalingAtTopLevel) {
  std::string error;
  auto config = ModelConfig::fromHFConfigJson(R"({
    "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
    "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
                                              error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->kvHeads, 4);
  EXPECT_EQ(config->headDim, 16);
  EXPECT_EQ(config->ropeScaling.type, RopeScaling::Type::Llama3);
  EXPECT_DOUBLE_EQ(config->ropeScaling.factor, 32.0);
  EXPECT_DOUBLE_EQ(config->ropeTheta, 500000.0);
}

TEST(ModelConfig, ErrorsNameTheProblem) {
  std::string error;
  EXPECT_FALSE(ModelConfig::fromHFConfigJson("{", error));
  EXPECT_EQ(error, "config.json is not a JSON object");
  EXPECT_FALSE(ModelConfig::fromHFConfigJson(R"({"model_type": "gpt2"})", error));
  EXPECT_NE(error.find("unsupported architecture 'gpt2'"), std::string::npos) << error;
  EXPECT_FALSE(ModelConfig::fromHFConfigJson(
      R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 3,
          "vocab_size": 10})",
      error));
  EXPECT_NE(error.find("not a multiple of kv_heads (3)"), std::string::npos) << error;
}

TEST(ModelConfig, SchemaHashSeparatesDimensions) {
  std::string error;
  const char *base = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})";
  auto a = ModelConfig::fromHFConfigJson(base, error);
  auto b = ModelConfig::fromHFConfigJson(base, error);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->schemaHash(), b->schemaHash());
  b->vocab = 101;
  EXPECT_NE(a->schemaHash(), b->schemaHash());
}

} // namespace

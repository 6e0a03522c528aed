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

TEST(ModelConfig, ResourceLimitsAreErrors) {
  // A corrupt or hostile config.json must fail with its value named, not make the site schema
  // or the weights allocate without bound.
  auto refusal = [](const std::string &extra) {
    std::string error;
    EXPECT_FALSE(ModelConfig::fromHFConfigJson(
        R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100)" +
            extra + "}",
        error));
    return error;
  };
  EXPECT_EQ(refusal(R"(, "num_hidden_layers": 1000000000)"),
            "model config has layers 1000000000, more than the supported 1024");
  EXPECT_EQ(refusal(R"(, "vocab_size": 4294967296)"),
            "model config has vocab 4294967296, more than the supported 16777216");
  EXPECT_EQ(refusal(R"(, "max_position_embeddings": -5)"),
            "model config has a negative context length -5");
  EXPECT_EQ(refusal(R"(, "rope_theta": -1)"),
            "model config has RoPE theta -1.000000; it must be positive and finite");
  EXPECT_EQ(refusal(R"(, "rms_norm_eps": 0)"),
            "model config has RMSNorm epsilon 0.000000; it must be positive and finite");
  EXPECT_EQ(refusal(R"(, "rope_scaling": {"rope_type": "llama3",
                                          "original_max_position_embeddings": 1e300})"),
            "model config has an invalid RoPE scaling (factor 8.000000)");
  // No default head_dim from a head count of zero (it used to divide by it).
  EXPECT_NE(refusal(R"(, "num_attention_heads": 0)").find("non-positive dimension"),
            std::string::npos);
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

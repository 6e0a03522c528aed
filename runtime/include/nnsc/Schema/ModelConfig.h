//===- ModelConfig.h - model hyperparameters --------------------*- C++ -*-===//
//
// The dimensions and options of a decoder-only model, read from GGUF metadata or a Hugging
// Face config.json. Dependency-free: shared by the compiler and the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SCHEMA_MODELCONFIG_H
#define NNSC_SCHEMA_MODELCONFIG_H

#include <cstdint>
#include <optional>
#include <string>

namespace nnsc::gguf {
class GGUFFile;
} // namespace nnsc::gguf

namespace nnsc::schema {

enum class ArchKind { Llama, Qwen2, Qwen3, Mistral };

/// "llama", "qwen2", "qwen3", "mistral".
const char *archKindName(ArchKind kind);

/// RoPE frequency scaling, as in transformers' rope_parameters / rope_scaling.
struct RopeScaling {
  enum class Type { None, Linear, Llama3 };
  Type type = Type::None;
  double factor = 1.0;
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  int64_t originalMaxPositions = 0;
};

struct ModelConfig {
  ArchKind arch = ArchKind::Llama;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  int64_t vocab = 0;
  int64_t maxPositions = 0;
  double rmsNormEps = 1e-5;
  double ropeTheta = 10000.0;
  RopeScaling ropeScaling;
  bool tiedEmbeddings = false;
  /// Bias on q/k/v projections (Qwen2; Llama's attention_bias).
  bool qkvBias = false;
  /// RMSNorm on each head of q and k before RoPE (Qwen3).
  bool qkNorm = false;

  /// Reads the config of a GGUF model. Tied embeddings are inferred from the absence of an
  /// 'output.weight' tensor. On failure returns nullopt and sets `error`.
  static std::optional<ModelConfig> fromGGUF(const gguf::GGUFFile &file, std::string &error);
  /// Parses the text of a Hugging Face config.json.
  static std::optional<ModelConfig> fromHFConfigJson(const std::string &json, std::string &error);
  /// Reads MODEL, a .gguf file or a Hugging Face model directory holding config.json.
  static std::optional<ModelConfig> fromPath(const std::string &path, std::string &error);

  /// A stable 64-bit hash of everything that determines site names and shapes; bundles record
  /// it and the runtime refuses a bundle built for another architecture or dimensions.
  uint64_t schemaHash() const;

  /// Checks that the dimensions are consistent (positive, heads divisible by kv heads, ...).
  bool validate(std::string &error) const;
};

} // namespace nnsc::schema

#endif // NNSC_SCHEMA_MODELCONFIG_H

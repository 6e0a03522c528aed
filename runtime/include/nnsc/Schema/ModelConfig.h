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

enum class ArchKind { Llama, Qwen2, Qwen3, Mistral, Gemma3 };

/// "llama", "qwen2", "qwen3", "mistral", "gemma3".
const char *archKindName(ArchKind kind);

/// The MLP's gate activation.
enum class Activation {
  Silu,     ///< SiLU (Llama, Qwen, Mistral: transformers' SiLUActivation)
  GeluTanh, ///< GELU, tanh approximation (Gemma: gelu_pytorch_tanh, GELUTanh)
};

/// What a model family fixes and its files do not carry: the layer's shape around the same
/// projections, in one place for the schema (module tree, site order), the loader (tensor
/// names) and the forward pass (docs/Models.md, "Families").
struct FamilyTraits {
  /// transformers' class-name prefix ("Llama" -> LlamaDecoderLayer, LlamaRMSNorm, ...).
  const char *classPrefix;
  /// The classes of `model` and `model.embed_tokens`.
  const char *modelClass;
  const char *embeddingClass;
  /// The RMSNorm around each block as well as before it (Gemma): post_attention_layernorm
  /// normalizes the attention output before the residual add, pre_feedforward_layernorm is
  /// the MLP's input norm and post_feedforward_layernorm normalizes the MLP output. Without
  /// it post_attention_layernorm is the MLP's input norm (Llama).
  bool sandwichNorms;
  /// The embedding is multiplied by sqrt(hidden) in the activation dtype
  /// (Gemma3TextScaledWordEmbedding; embed_tokens.output holds the scaled value).
  bool scaledEmbedding;
  /// q_norm and k_norm run after all three projections (Gemma) rather than each right after
  /// its projection (Qwen3): the order their sites fire in.
  bool headNormsAfterProjections;
  Activation activation;
  /// RMSNorm multiplies by 1 + weight (Gemma); the loader adds the 1 where the file does not
  /// (llama.cpp's converter stores 1 + weight, a Hugging Face checkpoint the weight).
  bool normWeightOffset;
};

const FamilyTraits &familyTraits(ArchKind kind);

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
  /// RMSNorm on each head of q and k before RoPE (Qwen3, Gemma 3).
  bool qkNorm = false;
  /// Sliding-window attention: a local layer's query at position p sees positions
  /// (p - slidingWindow, p]; 0 when every layer is global.
  int64_t slidingWindow = 0;
  /// With a window, every slidingWindowPattern-th layer (1-based) is global, the others
  /// local (Gemma 3: 6, layers 5, 11, 17, ... global); 0 makes every layer local.
  int64_t slidingWindowPattern = 0;
  /// RoPE base of the local layers (Gemma 3: 10000; the global ones use ropeTheta).
  double ropeLocalTheta = 10000.0;
  /// Queries are scaled by queryPreAttnScalar^-1/2 (Gemma); 0 means head_dim.
  double queryPreAttnScalar = 0;

  const FamilyTraits &traits() const { return familyTraits(arch); }
  /// Whether layer `layer` attends through the sliding window.
  bool isLocalLayer(int64_t layer) const {
    return slidingWindow > 0 &&
           (slidingWindowPattern <= 0 || (layer + 1) % slidingWindowPattern != 0);
  }
  /// The attention window of layer `layer` in positions, 0 for all of them.
  int64_t attentionWindow(int64_t layer) const { return isLocalLayer(layer) ? slidingWindow : 0; }

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

//===- ModelConfig.cpp - model hyperparameters ------------------*- C++ -*-===//

#include "nnsc/Schema/ModelConfig.h"

#include "nnsc/Support/GGUFFile.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nnsc::schema {

const char *archKindName(ArchKind kind) {
  switch (kind) {
  case ArchKind::Llama:
    return "llama";
  case ArchKind::Qwen2:
    return "qwen2";
  case ArchKind::Qwen3:
    return "qwen3";
  case ArchKind::Mistral:
    return "mistral";
  case ArchKind::Gemma3:
    return "gemma3";
  }
  return "unknown";
}

const FamilyTraits &familyTraits(ArchKind kind) {
  // classPrefix, modelClass, embeddingClass, sandwichNorms, scaledEmbedding,
  // headNormsAfterProjections, activation, normWeightOffset
  static const FamilyTraits llama{"Llama", "LlamaModel", "Embedding",      false,
                                  false,   false,        Activation::Silu, false};
  static const FamilyTraits qwen2{"Qwen2", "Qwen2Model", "Embedding",      false,
                                  false,   false,        Activation::Silu, false};
  static const FamilyTraits qwen3{"Qwen3", "Qwen3Model", "Embedding",      false,
                                  false,   false,        Activation::Silu, false};
  static const FamilyTraits mistral{"Mistral", "MistralModel", "Embedding",      false,
                                    false,     false,          Activation::Silu, false};
  static const FamilyTraits gemma3{"Gemma3",
                                   "Gemma3TextModel",
                                   "Gemma3TextScaledWordEmbedding",
                                   true,
                                   true,
                                   true,
                                   Activation::GeluTanh,
                                   true};
  switch (kind) {
  case ArchKind::Llama:
    return llama;
  case ArchKind::Qwen2:
    return qwen2;
  case ArchKind::Qwen3:
    return qwen3;
  case ArchKind::Mistral:
    return mistral;
  case ArchKind::Gemma3:
    return gemma3;
  }
  return llama;
}

static std::optional<ArchKind> parseArchKind(const std::string &name) {
  if (name == "llama")
    return ArchKind::Llama;
  if (name == "qwen2")
    return ArchKind::Qwen2;
  if (name == "qwen3")
    return ArchKind::Qwen3;
  if (name == "mistral")
    return ArchKind::Mistral;
  // transformers' Gemma3ForCausalLM is "gemma3_text"; GGUF files say "gemma3".
  if (name == "gemma3" || name == "gemma3_text")
    return ArchKind::Gemma3;
  return std::nullopt;
}

static const char *kSupported = "supported: llama, qwen2, qwen3, mistral, gemma3";

/// What Gemma 3's GGUF metadata does not carry, from transformers' Gemma3TextConfig (defaults
/// and the layer_types it derives) and llama.cpp's gemma3 graph (docs/Models.md, "Gemma 3"):
/// every sixth layer global, local RoPE base 10000, queries scaled by query_pre_attn_scalar
/// 256 (the file's head_dim, 256, for the 270M model). q_norm/k_norm always.
static void applyGemma3Facts(ModelConfig &config, std::optional<int64_t> slidingWindow) {
  config.qkNorm = true;
  config.slidingWindow = slidingWindow.value_or(4096);
  config.slidingWindowPattern = 6;
  config.ropeLocalTheta = 10000.0;
  config.queryPreAttnScalar = 256;
}

bool ModelConfig::validate(std::string &error) const {
  auto bad = [&](const std::string &what) {
    error = what;
    return false;
  };
  if (hidden <= 0 || intermediate <= 0 || layers <= 0 || heads <= 0 || kvHeads <= 0 ||
      headDim <= 0 || vocab <= 0)
    return bad("model config has a non-positive dimension (hidden " + std::to_string(hidden) +
               ", intermediate " + std::to_string(intermediate) + ", layers " +
               std::to_string(layers) + ", heads " + std::to_string(heads) + ", kv_heads " +
               std::to_string(kvHeads) + ", head_dim " + std::to_string(headDim) + ", vocab " +
               std::to_string(vocab) + ")");
  // Far beyond any model this runtime can run, and small enough that the site schema and the
  // weights of a config that passes stay within memory: a corrupt or hostile file fails here
  // rather than in an allocation.
  struct Limit {
    const char *name;
    int64_t value, max;
  };
  for (const Limit &l :
       {Limit{"hidden", hidden, int64_t(1) << 16},
        Limit{"intermediate", intermediate, int64_t(1) << 20}, Limit{"layers", layers, 1024},
        Limit{"heads", heads, 1024}, Limit{"kv_heads", kvHeads, 1024},
        Limit{"head_dim", headDim, 4096}, Limit{"vocab", vocab, int64_t(1) << 24},
        Limit{"max_positions", maxPositions, int64_t(1) << 24}})
    if (l.value > l.max)
      return bad("model config has " + std::string(l.name) + " " + std::to_string(l.value) +
                 ", more than the supported " + std::to_string(l.max));
  if (maxPositions < 0)
    return bad("model config has a negative context length " + std::to_string(maxPositions));
  if (!(rmsNormEps > 0 && std::isfinite(rmsNormEps)))
    return bad("model config has RMSNorm epsilon " + std::to_string(rmsNormEps) +
               "; it must be positive and finite");
  if (!(ropeTheta > 0 && std::isfinite(ropeTheta)))
    return bad("model config has RoPE theta " + std::to_string(ropeTheta) +
               "; it must be positive and finite");
  if (ropeScaling.type != RopeScaling::Type::None &&
      !(ropeScaling.factor > 0 && std::isfinite(ropeScaling.factor) &&
        std::isfinite(ropeScaling.lowFreqFactor) && std::isfinite(ropeScaling.highFreqFactor) &&
        ropeScaling.originalMaxPositions >= 0))
    return bad("model config has an invalid RoPE scaling (factor " +
               std::to_string(ropeScaling.factor) + ")");
  if (slidingWindow < 0 || slidingWindowPattern < 0)
    return bad("model config has a negative sliding window (" + std::to_string(slidingWindow) +
               ") or window pattern (" + std::to_string(slidingWindowPattern) + ")");
  if (!(ropeLocalTheta > 0 && std::isfinite(ropeLocalTheta)) ||
      !(queryPreAttnScalar >= 0 && std::isfinite(queryPreAttnScalar)))
    return bad("model config has local RoPE theta " + std::to_string(ropeLocalTheta) +
               " and query scalar " + std::to_string(queryPreAttnScalar) +
               "; they must be finite, the theta positive");
  if (heads % kvHeads != 0)
    return bad("heads (" + std::to_string(heads) + ") is not a multiple of kv_heads (" +
               std::to_string(kvHeads) + ")");
  if (headDim % 2 != 0)
    return bad("head_dim " + std::to_string(headDim) + " is odd; RoPE needs an even head_dim");
  return true;
}

std::optional<ModelConfig> ModelConfig::fromGGUF(const gguf::GGUFFile &file, std::string &error) {
  auto fail = [&](const std::string &what) -> std::optional<ModelConfig> {
    error = "'" + file.path() + "': " + what;
    return std::nullopt;
  };
  std::optional<std::string> archName = file.getString("general.architecture");
  if (!archName)
    return fail("missing 'general.architecture'");
  std::optional<ArchKind> arch = parseArchKind(*archName);
  if (!arch)
    return fail("unsupported architecture '" + *archName + "' (" + kSupported + ")");

  ModelConfig config;
  config.arch = *arch;
  const std::string p = *archName + ".";
  auto needInt = [&](const std::string &key, int64_t &out) {
    std::optional<int64_t> v = file.getInt(p + key);
    if (!v) {
      error = "'" + file.path() + "': missing integer '" + p + key + "'";
      return false;
    }
    out = *v;
    return true;
  };
  if (!needInt("embedding_length", config.hidden) ||
      !needInt("feed_forward_length", config.intermediate) ||
      !needInt("block_count", config.layers) || !needInt("attention.head_count", config.heads))
    return std::nullopt;
  config.kvHeads = file.getInt(p + "attention.head_count_kv").value_or(config.heads);
  // A zero or negative head count is reported by validate(); no default head_dim from it.
  config.headDim = file.getInt(p + "attention.key_length")
                       .value_or(config.heads > 0 ? config.hidden / config.heads : 0);
  config.maxPositions = file.getInt(p + "context_length").value_or(0);
  config.rmsNormEps = file.getFloat(p + "attention.layer_norm_rms_epsilon").value_or(1e-5);
  config.ropeTheta = file.getFloat(p + "rope.freq_base").value_or(10000.0);
  if (std::optional<std::string> type = file.getString(p + "rope.scaling.type")) {
    if (*type == "linear") {
      config.ropeScaling.type = RopeScaling::Type::Linear;
      config.ropeScaling.factor = file.getFloat(p + "rope.scaling.factor").value_or(1.0);
    } else if (*type != "none") {
      return fail("unsupported RoPE scaling '" + *type + "'");
    }
  }
  if (const auto *tokens = file.getStringArray("tokenizer.ggml.tokens"))
    config.vocab = int64_t(tokens->size());
  config.vocab = file.getInt(p + "vocab_size").value_or(config.vocab);
  if (const gguf::TensorInfo *embed = file.findTensor("token_embd.weight"))
    if (embed->dims.size() == 2)
      config.vocab = embed->dims[1];
  config.tiedEmbeddings = file.findTensor("output.weight") == nullptr;
  config.qkvBias = file.findTensor("blk.0.attn_q.bias") != nullptr;
  config.qkNorm = file.findTensor("blk.0.attn_q_norm.weight") != nullptr;
  if (config.arch == ArchKind::Gemma3)
    applyGemma3Facts(config, file.getInt(p + "attention.sliding_window"));
  if (!config.validate(error))
    return fail(error);
  return config;
}

std::optional<ModelConfig> ModelConfig::fromHFConfigJson(const std::string &text,
                                                         std::string &error) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "config.json is not a JSON object";
    return std::nullopt;
  }
  auto str = [&](const char *key) -> std::string {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto integer = [&](const char *key, int64_t fallback) -> int64_t {
    auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  auto number = [&](const nlohmann::json &obj, const char *key, double fallback) -> double {
    auto it = obj.find(key);
    return it != obj.end() && it->is_number() ? it->get<double>() : fallback;
  };
  auto boolean = [&](const char *key, bool fallback) -> bool {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
  };

  std::string modelType = str("model_type");
  std::optional<ArchKind> arch = parseArchKind(modelType);
  if (!arch) {
    error = modelType.empty() ? std::string("config.json has no 'model_type'")
                              : "unsupported architecture '" + modelType + "' (" + kSupported + ")";
    return std::nullopt;
  }
  ModelConfig config;
  config.arch = *arch;
  config.hidden = integer("hidden_size", 0);
  config.intermediate = integer("intermediate_size", 0);
  config.layers = integer("num_hidden_layers", 0);
  config.heads = integer("num_attention_heads", 0);
  config.kvHeads = integer("num_key_value_heads", config.heads);
  config.headDim = integer("head_dim", config.heads > 0 ? config.hidden / config.heads : 0);
  config.vocab = integer("vocab_size", 0);
  config.maxPositions = integer("max_position_embeddings", 0);
  config.rmsNormEps = number(j, "rms_norm_eps", 1e-6);
  config.tiedEmbeddings = boolean("tie_word_embeddings", false);
  config.qkvBias = config.arch == ArchKind::Qwen2 || boolean("attention_bias", false);
  config.qkNorm = config.arch == ArchKind::Qwen3;

  // transformers >= 5 nests RoPE settings in rope_parameters; older configs use rope_theta and
  // rope_scaling at the top level.
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json *rope = &empty;
  for (const char *key : {"rope_parameters", "rope_scaling"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_object()) {
      rope = &*it;
      break;
    }
  }
  // Gemma 3 keeps one set per attention type: {"full_attention": {...}, "sliding_attention":
  // {...}}, or rope_local_base_freq beside the global ones in older configs.
  double ropeLocalTheta = number(j, "rope_local_base_freq", 10000.0);
  if (auto local = rope->find("sliding_attention"); local != rope->end() && local->is_object())
    ropeLocalTheta = number(*local, "rope_theta", ropeLocalTheta);
  if (auto global = rope->find("full_attention"); global != rope->end() && global->is_object())
    rope = &*global;
  config.ropeTheta = number(*rope, "rope_theta", number(j, "rope_theta", 10000.0));
  std::string ropeType;
  for (const char *key : {"rope_type", "type"}) {
    auto it = rope->find(key);
    if (it != rope->end() && it->is_string()) {
      ropeType = it->get<std::string>();
      break;
    }
  }
  if (ropeType == "linear") {
    config.ropeScaling.type = RopeScaling::Type::Linear;
    config.ropeScaling.factor = number(*rope, "factor", 1.0);
  } else if (ropeType == "llama3") {
    config.ropeScaling.type = RopeScaling::Type::Llama3;
    config.ropeScaling.factor = number(*rope, "factor", 8.0);
    config.ropeScaling.lowFreqFactor = number(*rope, "low_freq_factor", 1.0);
    config.ropeScaling.highFreqFactor = number(*rope, "high_freq_factor", 4.0);
    // Range-checked before the conversion (a double outside int64_t's range is undefined
    // behaviour to convert); validate() reports the -1 of a bad one.
    double original = number(*rope, "original_max_position_embeddings", 8192);
    config.ropeScaling.originalMaxPositions =
        original >= 0 && original <= double(int64_t(1) << 40) ? int64_t(original) : -1;
  } else if (!ropeType.empty() && ropeType != "default") {
    error = "unsupported RoPE scaling '" + ropeType + "' (supported: default, linear, llama3)";
    return std::nullopt;
  }
  if (config.arch == ArchKind::Gemma3) {
    applyGemma3Facts(config, integer("sliding_window", 4096));
    config.ropeLocalTheta = ropeLocalTheta;
    config.queryPreAttnScalar = number(j, "query_pre_attn_scalar", 256);
    config.slidingWindowPattern = integer("sliding_window_pattern", 6);
    // transformers derives layer_types from the pattern; a config listing another
    // arrangement is one this runtime cannot describe.
    if (auto types = j.find("layer_types"); types != j.end() && types->is_array())
      for (size_t i = 0; i < types->size(); ++i) {
        const bool sliding = (*types)[i] == "sliding_attention";
        if (sliding != config.isLocalLayer(int64_t(i))) {
          error = "config.json's layer_types[" + std::to_string(i) +
                  "] does not follow sliding_window_pattern " +
                  std::to_string(config.slidingWindowPattern) +
                  " (supported: every pattern-th layer global)";
          return std::nullopt;
        }
      }
    if (std::string act = str("hidden_activation"); !act.empty() && act != "gelu_pytorch_tanh") {
      error = "unsupported hidden_activation '" + act + "' (supported: gelu_pytorch_tanh)";
      return std::nullopt;
    }
  }
  if (!config.validate(error))
    return std::nullopt;
  return config;
}

std::optional<ModelConfig> ModelConfig::fromPath(const std::string &path, std::string &error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path configPath = fs::path(path) / "config.json";
    std::ifstream in(configPath);
    if (!in) {
      error = "'" + path + "' is a directory without a config.json";
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::optional<ModelConfig> config = fromHFConfigJson(text.str(), error);
    if (!config)
      error = "'" + configPath.string() + "': " + error;
    return config;
  }
  std::unique_ptr<gguf::GGUFFile> file = gguf::GGUFFile::open(path, error);
  if (!file)
    return std::nullopt;
  return fromGGUF(*file, error);
}

uint64_t ModelConfig::schemaHash() const {
  // FNV-1a over the fields that determine site names and shapes.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= uint64_t(v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  // The revision of Architecture's site list for the same fields: 2 added the attention
  // pattern sites, which renumbered every later site.
  constexpr int64_t SiteListRevision = 2;
  for (int64_t v : {SiteListRevision, int64_t(arch), hidden, intermediate, layers, heads, kvHeads,
                    headDim, vocab, int64_t(qkNorm), int64_t(qkvBias), int64_t(tiedEmbeddings)})
    mix(v);
  return h;
}

} // namespace nnsc::schema

//===- Architecture.h - module tree and hook sites --------------*- C++ -*-===//
//
// The single source of truth about a model's hook points ("sites"), shared by the compiler
// (name resolution, shapes, order checks) and the runtime (which sites it fires, in which
// order). Module names are Hugging Face's (`model.layers.3.mlp.down_proj`); every module has an
// `input` and an `output` site; sites are numbered in the order they fire during one forward
// pass, followed by the sequence-level phases `logits`, `samples` and `result`.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SCHEMA_ARCHITECTURE_H
#define NNSC_SCHEMA_ARCHITECTURE_H

#include "nnsc/Schema/ModelConfig.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnsc::schema {

/// A dimension of a site's shape: the per-sequence token count T, or a fixed size.
constexpr int64_t kTokens = -1;
/// A dimension of a site's shape: the sequence's context length S at this step (every position
/// its queries see, prefix-cached ones included); only attention patterns have it.
constexpr int64_t kContext = -2;

enum class ElementType { F32, I64 };

enum class SiteKind {
  Input,   ///< a module's first input (a forward pre-hook)
  Output,  ///< a module's result (a forward hook)
  Pattern, ///< a self-attention module's softmax probabilities [heads, T, S]
  Logits,  ///< [vocab] logits of the position the sampler uses, per sequence and step
  Samples, ///< i64 scalar: the token sampled this step
  Result,  ///< i64[N]: all generated tokens, once the request finishes
};

/// Token-level sites fire during the forward pass over the flat token batch; sequence-level
/// ones after it, once per sequence.
enum class Phase { Forward, Logits, Samples, Result };

struct Site {
  /// Canonical dotted path: "model.layers.3.mlp.output", "lm_head.input", "logits".
  std::string path;
  SiteKind kind;
  Phase phase;
  /// Index of the owning module in Architecture::modules(), or -1 for special sites.
  int module;
  /// Decoder layer the site belongs to, or -1.
  int layer;
  /// Shape for one sequence at one step; kTokens marks the token dimension, kContext the
  /// context length.
  std::vector<int64_t> shape;
  ElementType elementType;
  /// Position in firing order; also the site's index in Architecture::sites().
  int order;
  /// False for `result` (the request is over) and for embed_tokens.input (token ids feed the
  /// embedding; they are chosen by the prompt, not patched).
  bool writable;
};

struct Module {
  /// Canonical dotted path ("model.layers.3.self_attn.q_proj"); `name` is its last component.
  std::string path;
  std::string name;
  /// Hugging Face class name ("LlamaDecoderLayer", "Linear", "LlamaRMSNorm", ...).
  std::string type;
  int parent;
  std::vector<int> children;
  int layer;
  int inputSite;
  int outputSite;
  /// Whether a trace may apply this module to a value (`norm(h)`, `layers[3].mlp(x)`).
  bool callable;
};

class Architecture {
public:
  explicit Architecture(const ModelConfig &config);

  const ModelConfig &config() const { return modelConfig; }
  const std::vector<Module> &modules() const { return moduleList; }
  const std::vector<Site> &sites() const { return siteList; }

  /// Looks up a canonical module path ("model.layers.3.mlp"); -1 if absent.
  int findModule(std::string_view path) const;
  /// Looks up a canonical site path ("model.layers.3.mlp.output", "logits"); -1 if absent.
  int findSite(std::string_view path) const;
  /// The canonical path an alias stands for ("layers" -> "model.layers"), or nullopt.
  static std::optional<std::string_view> expandAlias(std::string_view name);
  /// Names of the model dimensions usable in parameter types, with their sizes.
  std::map<std::string, int64_t> dimensionNames() const;

private:
  int addModule(const std::string &name, const std::string &type, int parent, int layer,
                bool callable);
  void addLeafSites(int module, const std::vector<int64_t> &inShape,
                    const std::vector<int64_t> &outShape);
  int addSite(int module, SiteKind kind, std::vector<int64_t> shape, ElementType type,
              bool writable = true);
  void buildDecoderLayer(int layers, int index);

  ModelConfig modelConfig;
  std::vector<Module> moduleList;
  std::vector<Site> siteList;
  std::map<std::string, int, std::less<>> moduleByPath;
  std::map<std::string, int, std::less<>> siteByPath;
};

} // namespace nnsc::schema

#endif // NNSC_SCHEMA_ARCHITECTURE_H

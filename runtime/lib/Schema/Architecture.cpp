//===- Architecture.cpp - module tree and hook sites ------------*- C++ -*-===//
//
// The module tree mirrors transformers' LlamaForCausalLM / Qwen2ForCausalLM /
// Qwen3ForCausalLM / MistralForCausalLM / Gemma3ForCausalLM, and sites are added in the order
// their hooks fire in those classes' forward methods; the family's differences come from its
// FamilyTraits. `model.rotary_emb` is left out: its output is a (cos, sin)
// tuple, not an activation.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Schema/Architecture.h"

#include <cassert>

namespace nnsc::schema {

int Architecture::addModule(const std::string &name, const std::string &type, int parent, int layer,
                            bool callable) {
  Module m;
  m.name = name;
  m.path = parent < 0 ? name : moduleList[parent].path + "." + name;
  m.type = type;
  m.parent = parent;
  m.layer = layer;
  m.inputSite = -1;
  m.outputSite = -1;
  m.callable = callable;
  int index = int(moduleList.size());
  if (parent >= 0)
    moduleList[parent].children.push_back(index);
  moduleByPath[m.path] = index;
  moduleList.push_back(std::move(m));
  return index;
}

int Architecture::addSite(int module, SiteKind kind, std::vector<int64_t> shape, ElementType type,
                          bool writable) {
  Site s;
  s.kind = kind;
  s.module = module;
  s.layer = module >= 0 ? moduleList[module].layer : -1;
  s.shape = std::move(shape);
  s.elementType = type;
  s.order = int(siteList.size());
  s.writable = writable;
  switch (kind) {
  case SiteKind::Input:
    s.path = moduleList[module].path + ".input";
    s.phase = Phase::Forward;
    moduleList[module].inputSite = s.order;
    break;
  case SiteKind::Output:
    s.path = moduleList[module].path + ".output";
    s.phase = Phase::Forward;
    moduleList[module].outputSite = s.order;
    break;
  case SiteKind::Pattern:
    s.path = moduleList[module].path + ".pattern";
    s.phase = Phase::Forward;
    break;
  case SiteKind::Logits:
    s.path = "logits";
    s.phase = Phase::Logits;
    break;
  case SiteKind::Samples:
    s.path = "samples";
    s.phase = Phase::Samples;
    break;
  case SiteKind::Result:
    s.path = "result";
    s.phase = Phase::Result;
    break;
  }
  siteByPath[s.path] = s.order;
  siteList.push_back(std::move(s));
  return siteList.back().order;
}

void Architecture::addLeafSites(int module, const std::vector<int64_t> &inShape,
                                const std::vector<int64_t> &outShape) {
  addSite(module, SiteKind::Input, inShape, ElementType::F32);
  addSite(module, SiteKind::Output, outShape, ElementType::F32);
}

void Architecture::buildDecoderLayer(int layers, int index) {
  const ModelConfig &c = modelConfig;
  const FamilyTraits &traits = c.traits();
  const std::string prefix = traits.classPrefix;
  const std::string norm = prefix + "RMSNorm";
  const std::vector<int64_t> hidden = {kTokens, c.hidden};
  const std::vector<int64_t> inter = {kTokens, c.intermediate};
  const std::vector<int64_t> qShape = {kTokens, c.heads * c.headDim};
  const std::vector<int64_t> kvShape = {kTokens, c.kvHeads * c.headDim};
  // q_norm/k_norm normalize each head: the projection viewed as [T, heads, head_dim].
  const std::vector<int64_t> qHeads = {kTokens, c.heads, c.headDim};
  const std::vector<int64_t> kvHeads = {kTokens, c.kvHeads, c.headDim};

  int layer = addModule(std::to_string(index), prefix + "DecoderLayer", layers, index, false);
  addSite(layer, SiteKind::Input, hidden, ElementType::F32);

  int inNorm = addModule("input_layernorm", norm, layer, index, true);
  addLeafSites(inNorm, hidden, hidden);

  int attn = addModule("self_attn", prefix + "Attention", layer, index, false);
  addSite(attn, SiteKind::Input, hidden, ElementType::F32);
  auto headNorm = [&](const char *name, const std::vector<int64_t> &shape) {
    if (c.qkNorm)
      addLeafSites(addModule(name, norm, attn, index, true), shape, shape);
  };
  addLeafSites(addModule("q_proj", "Linear", attn, index, true), hidden, qShape);
  if (!traits.headNormsAfterProjections) // Qwen3: each norm right after its projection
    headNorm("q_norm", qHeads);
  addLeafSites(addModule("k_proj", "Linear", attn, index, true), hidden, kvShape);
  if (!traits.headNormsAfterProjections)
    headNorm("k_norm", kvHeads);
  addLeafSites(addModule("v_proj", "Linear", attn, index, true), hidden, kvShape);
  if (traits.headNormsAfterProjections) { // Gemma: both after v_proj
    headNorm("q_norm", qHeads);
    headNorm("k_norm", kvHeads);
  }
  // The softmax of eager attention: after q/k/v, before o_proj sees the heads' outputs.
  addSite(attn, SiteKind::Pattern, {c.heads, kTokens, kContext}, ElementType::F32);
  int o = addModule("o_proj", "Linear", attn, index, true);
  addLeafSites(o, qShape, hidden);
  addSite(attn, SiteKind::Output, hidden, ElementType::F32);

  // Llama: post_attention_layernorm is the MLP's input norm. Gemma: it normalizes the
  // attention output before the residual add, and pre_feedforward_layernorm feeds the MLP.
  int postNorm = addModule("post_attention_layernorm", norm, layer, index, true);
  addLeafSites(postNorm, hidden, hidden);
  if (traits.sandwichNorms)
    addLeafSites(addModule("pre_feedforward_layernorm", norm, layer, index, true), hidden, hidden);

  int mlp = addModule("mlp", prefix + "MLP", layer, index, true);
  addSite(mlp, SiteKind::Input, hidden, ElementType::F32);
  int gate = addModule("gate_proj", "Linear", mlp, index, true);
  addLeafSites(gate, hidden, inter);
  const char *activation =
      traits.activation == Activation::GeluTanh ? "GELUTanh" : "SiLUActivation";
  int act = addModule("act_fn", activation, mlp, index, true);
  addLeafSites(act, inter, inter);
  int up = addModule("up_proj", "Linear", mlp, index, true);
  addLeafSites(up, hidden, inter);
  int down = addModule("down_proj", "Linear", mlp, index, true);
  addLeafSites(down, inter, hidden);
  addSite(mlp, SiteKind::Output, hidden, ElementType::F32);
  if (traits.sandwichNorms)
    addLeafSites(addModule("post_feedforward_layernorm", norm, layer, index, true), hidden, hidden);

  addSite(layer, SiteKind::Output, hidden, ElementType::F32);
}

Architecture::Architecture(const ModelConfig &config) : modelConfig(config) {
  const ModelConfig &c = modelConfig;
  const FamilyTraits &traits = c.traits();
  const std::vector<int64_t> hidden = {kTokens, c.hidden};

  int model = addModule("model", traits.modelClass, -1, -1, false);
  int embed = addModule("embed_tokens", traits.embeddingClass, model, -1, true);
  addSite(embed, SiteKind::Input, {kTokens}, ElementType::I64, /*writable=*/false);
  addSite(embed, SiteKind::Output, hidden, ElementType::F32);

  int layers = addModule("layers", "ModuleList", model, -1, false);
  for (int i = 0; i < c.layers; ++i)
    buildDecoderLayer(layers, i);

  int norm = addModule("norm", std::string(traits.classPrefix) + "RMSNorm", model, -1, true);
  addLeafSites(norm, hidden, hidden);

  int lmHead = addModule("lm_head", "Linear", -1, -1, true);
  addLeafSites(lmHead, hidden, {kTokens, c.vocab});

  addSite(-1, SiteKind::Logits, {c.vocab}, ElementType::F32);
  addSite(-1, SiteKind::Samples, {}, ElementType::I64);
  addSite(-1, SiteKind::Result, {kTokens}, ElementType::I64, /*writable=*/false);
}

int Architecture::findModule(std::string_view path) const {
  auto it = moduleByPath.find(path);
  return it == moduleByPath.end() ? -1 : it->second;
}

int Architecture::findSite(std::string_view path) const {
  auto it = siteByPath.find(path);
  return it == siteByPath.end() ? -1 : it->second;
}

std::optional<std::string_view> Architecture::expandAlias(std::string_view name) {
  if (name == "layers")
    return "model.layers";
  if (name == "embed")
    return "model.embed_tokens";
  if (name == "norm")
    return "model.norm";
  if (name == "lm_head")
    return "lm_head";
  return std::nullopt;
}

std::map<std::string, int64_t> Architecture::dimensionNames() const {
  return {{"hidden", modelConfig.hidden},    {"vocab", modelConfig.vocab},
          {"heads", modelConfig.heads},      {"kv_heads", modelConfig.kvHeads},
          {"head_dim", modelConfig.headDim}, {"intermediate", modelConfig.intermediate},
          {"layers", modelConfig.layers}};
}

} // namespace nnsc::schema

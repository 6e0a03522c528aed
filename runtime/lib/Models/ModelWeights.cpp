//===- ModelWeights.cpp - decoder weights in the compute dtype --*- C++ -*-===//

#include "nnsc/Runtime/Models/ModelWeights.h"

#include "nnsc/Runtime/Models/GGUFWeights.h"
#include "nnsc/Runtime/Models/SafetensorsWeights.h"

#include <filesystem>

namespace nnsc {

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

ModelWeights assembleWeights(const schema::ModelConfig &c, WeightSource &source,
                             torch::ScalarType dtype, const LoadProgress &progress,
                             bool keepQuantized) {
  ModelWeights w;
  w.config = c;
  w.dtype = dtype;
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
  const int64_t total = 3 + c.layers;
  int64_t done = 0;
  auto step = [&] {
    if (progress)
      progress(++done, total);
  };
  auto get = [&](const std::string &name, std::vector<int64_t> shape, bool optional = false) {
    return source.get(name, shape, dtype, optional);
  };
  auto quant = [&](std::initializer_list<std::pair<std::string, std::vector<int64_t>>> parts) {
    if (!keepQuantized)
      return QuantizedMatrix();
    std::vector<QuantizedMatrix> blocks;
    for (const auto &[name, shape] : parts)
      blocks.push_back(source.getQuantized(name, shape));
    return blocks.size() == 1 ? blocks[0] : QuantizedMatrix::cat(blocks);
  };

  w.embed = get("model.embed_tokens.weight", {c.vocab, c.hidden});
  step();
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.inputNorm = get(p + "input_layernorm.weight", {c.hidden});
    l.qkv = torch::cat({get(p + "self_attn.q_proj.weight", {q, c.hidden}),
                        get(p + "self_attn.k_proj.weight", {kv, c.hidden}),
                        get(p + "self_attn.v_proj.weight", {kv, c.hidden})});
    if (c.qkvBias)
      l.qkvBias = torch::cat({get(p + "self_attn.q_proj.bias", {q}),
                              get(p + "self_attn.k_proj.bias", {kv}),
                              get(p + "self_attn.v_proj.bias", {kv})});
    if (c.qkNorm) {
      l.qNorm = get(p + "self_attn.q_norm.weight", {c.headDim});
      l.kNorm = get(p + "self_attn.k_norm.weight", {c.headDim});
    }
    l.o = get(p + "self_attn.o_proj.weight", {c.hidden, q});
    l.postNorm = get(p + "post_attention_layernorm.weight", {c.hidden});
    l.gateUp = torch::cat({get(p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}),
                           get(p + "mlp.up_proj.weight", {c.intermediate, c.hidden})});
    l.down = get(p + "mlp.down_proj.weight", {c.hidden, c.intermediate});
    l.qkvQuant = quant({{p + "self_attn.q_proj.weight", {q, c.hidden}},
                        {p + "self_attn.k_proj.weight", {kv, c.hidden}},
                        {p + "self_attn.v_proj.weight", {kv, c.hidden}}});
    l.oQuant = quant({{p + "self_attn.o_proj.weight", {c.hidden, q}}});
    l.gateUpQuant = quant({{p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}},
                           {p + "mlp.up_proj.weight", {c.intermediate, c.hidden}}});
    l.downQuant = quant({{p + "mlp.down_proj.weight", {c.hidden, c.intermediate}}});
    w.layers.push_back(std::move(l));
    step();
  }
  w.norm = get("model.norm.weight", {c.hidden});
  step();
  // transformers ties lm_head to the embedding whenever the config says so, even if a file
  // also carries an lm_head tensor.
  w.lmHead = c.tiedEmbeddings ? w.embed : get("lm_head.weight", {c.vocab, c.hidden});
  w.lmHeadQuant = quant({{c.tiedEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight",
                          {c.vocab, c.hidden}}});
  step();
  return w;
}

int64_t ModelWeights::quantizedBytes() const {
  int64_t bytes = lmHeadQuant.bytes();
  for (const LayerWeights &l : layers)
    bytes += l.qkvQuant.bytes() + l.oQuant.bytes() + l.gateUpQuant.bytes() + l.downQuant.bytes();
  return bytes;
}

ModelWeights ModelWeights::load(const std::string &path, torch::ScalarType dtype,
                                const LoadProgress &progress, bool keepQuantized) {
  if (dtype != torch::kFloat32 && dtype != torch::kBFloat16)
    throw ModelLoadError(std::string("unsupported compute dtype '") + c10::toString(dtype) +
                         "' (supported: float32, bfloat16)");
  std::string error;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::optional<schema::ModelConfig> config = schema::ModelConfig::fromPath(path, error);
    if (!config)
      throw ModelLoadError(error);
    SafetensorsWeightSource source(path);
    return assembleWeights(*config, source, dtype, progress);
  }
  std::unique_ptr<gguf::GGUFFile> file = gguf::GGUFFile::open(path, error);
  if (!file)
    throw ModelLoadError(error);
  std::optional<schema::ModelConfig> config = schema::ModelConfig::fromGGUF(*file, error);
  if (!config)
    throw ModelLoadError(error);
  GGUFWeightSource source(*file, *config);
  return assembleWeights(*config, source, dtype, progress, keepQuantized);
}

} // namespace nnsc

//===- ModelWeights.cpp - decoder weights in the compute dtype --*- C++ -*-===//

#include "nnsc/Runtime/Models/ModelWeights.h"

#include "nnsc/Runtime/Kernels/QuantGemv.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h" // oneDnnServes
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

ProjectionForms defaultProjectionForms() {
  return quantDecodeEnabled() ? ProjectionForms::BlocksAndPacked : ProjectionForms::Widened;
}

ModelWeights assembleWeights(const schema::ModelConfig &c, WeightSource &source,
                             torch::ScalarType dtype, const LoadProgress &progress,
                             ProjectionForms forms, ShardRank rank) {
  const bool keepQuantized = forms != ProjectionForms::Widened;
  // Products over the row limit need oneDNN's packed copy in place of the widened one, the
  // blocks the quantized kernels; and one rank: the tensor-parallel paths read widened shards.
  const bool packedOnly =
      (forms == ProjectionForms::BlocksAndPacked || forms == ProjectionForms::BlocksOnly) &&
      rank.size == 1 && oneDnnServes(dtype) && kernels::quantIsaSupported(kernels::QuantIsa::Avx2);
  ModelWeights w;
  w.config = c;
  w.shard = TensorShard::of(c, rank.rank, rank.size);
  w.dtype = dtype;
  const TensorShard &sh = w.shard;
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim, d = c.headDim;
  const int64_t total = 3 + c.layers;
  int64_t done = 0;
  auto step = [&] {
    if (progress)
      progress(++done, total);
  };
  // This rank's [begin, begin + count) along `dim` of a tensor: a copy that owns only the
  // slice, so the whole tensor is freed once it is read.
  struct Slice {
    int64_t dim = 0, begin = 0, count = -1;
  };
  auto take = [&](const torch::Tensor &t, Slice s) {
    if (!t.defined() || s.count < 0 || (s.begin == 0 && s.count == t.size(s.dim)))
      return t;
    return t.narrow(s.dim, s.begin, s.count).clone();
  };
  auto get = [&](const std::string &name, std::vector<int64_t> shape, Slice s = {},
                 bool optional = false) {
    return take(source.get(name, shape, dtype, optional), s);
  };
  // An RMSNorm's weight as the kernels multiply by it: 1 + weight for a family whose norm
  // adds the 1 (Gemma) where the file holds the weight itself.
  const bool addNormOffset = c.traits().normWeightOffset && !source.normsHoldOffset();
  auto normWeight = [&](const std::string &name, int64_t size) {
    torch::Tensor weight = get(name, {size});
    return addNormOffset ? weight.add(1) : weight;
  };
  auto quantPart = [&](const std::string &name, const std::vector<int64_t> &shape, Slice s) {
    QuantizedMatrix m = source.getQuantized(name, shape);
    if (!m.defined() || s.count < 0 || (s.begin == 0 && s.count == shape[size_t(s.dim)]))
      return m;
    if (s.dim == 1)
      return m.narrowCols(s.begin, s.count);
    m = m.narrowRows(s.begin, s.count);
    m.blocks = m.blocks.clone();
    return m;
  };
  struct Part {
    std::string name;
    std::vector<int64_t> shape;
    Slice slice;
  };
  auto quant = [&](std::initializer_list<Part> parts) {
    if (!keepQuantized)
      return QuantizedMatrix();
    std::vector<QuantizedMatrix> blocks;
    for (const Part &p : parts)
      blocks.push_back(quantPart(p.name, p.shape, p.slice));
    return blocks.size() == 1 ? blocks[0] : QuantizedMatrix::cat(blocks);
  };
  // A projection from its parts, fused in row order: its blocks, and its widened tensor unless
  // packedOnly and the blocks serve it.
  auto projection = [&](std::initializer_list<Part> parts, torch::Tensor &widened,
                        QuantizedMatrix &blocks) {
    blocks = quant(parts);
    if (packedOnly && blocks.defined())
      return;
    std::vector<torch::Tensor> rows;
    for (const Part &p : parts)
      rows.push_back(get(p.name, p.shape, p.slice));
    widened = rows.size() == 1 ? rows[0] : torch::cat(rows);
  };
  // Column-parallel rows (q, k/v, gate/up), row-parallel columns (o, down), vocabulary rows.
  const Slice qRows{0, sh.headBegin * d, sh.heads * d},
      kvRows{0, sh.kvHeadBegin * d, sh.kvHeads * d};
  const Slice qCols{1, qRows.begin, qRows.count};
  const Slice interRows{0, sh.interBegin, sh.intermediate},
      interCols{1, sh.interBegin, sh.intermediate};
  const Slice vocabRows{0, sh.vocabBegin, sh.vocabCount};

  // The token lookup widens its rows from the embedding's blocks where they serve it
  // (packedOnly); a tied embedding's blocks are the lm_head's too.
  QuantizedMatrix embedBlocks;
  if (c.tiedEmbeddings || packedOnly)
    embedBlocks = quant({{"model.embed_tokens.weight", {c.vocab, c.hidden}, vocabRows}});
  if (!(packedOnly && embedBlocks.defined()))
    w.embed = get("model.embed_tokens.weight", {c.vocab, c.hidden}, vocabRows);
  step();
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.inputNorm = normWeight(p + "input_layernorm.weight", c.hidden);
    projection({{p + "self_attn.q_proj.weight", {q, c.hidden}, qRows},
                {p + "self_attn.k_proj.weight", {kv, c.hidden}, kvRows},
                {p + "self_attn.v_proj.weight", {kv, c.hidden}, kvRows}},
               l.qkv, l.qkvQuant);
    if (c.qkvBias)
      l.qkvBias = torch::cat({get(p + "self_attn.q_proj.bias", {q}, qRows),
                              get(p + "self_attn.k_proj.bias", {kv}, kvRows),
                              get(p + "self_attn.v_proj.bias", {kv}, kvRows)});
    if (c.qkNorm) {
      l.qNorm = normWeight(p + "self_attn.q_norm.weight", c.headDim);
      l.kNorm = normWeight(p + "self_attn.k_norm.weight", c.headDim);
    }
    projection({{p + "self_attn.o_proj.weight", {c.hidden, q}, qCols}}, l.o, l.oQuant);
    if (c.traits().sandwichNorms) {
      l.attnOutNorm = normWeight(p + "post_attention_layernorm.weight", c.hidden);
      l.postNorm = normWeight(p + "pre_feedforward_layernorm.weight", c.hidden);
      l.mlpOutNorm = normWeight(p + "post_feedforward_layernorm.weight", c.hidden);
    } else {
      l.postNorm = normWeight(p + "post_attention_layernorm.weight", c.hidden);
    }
    projection({{p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}, interRows},
                {p + "mlp.up_proj.weight", {c.intermediate, c.hidden}, interRows}},
               l.gateUp, l.gateUpQuant);
    projection({{p + "mlp.down_proj.weight", {c.hidden, c.intermediate}, interCols}}, l.down,
               l.downQuant);
    w.layers.push_back(std::move(l));
    step();
  }
  w.norm = normWeight("model.norm.weight", c.hidden);
  step();
  // transformers ties lm_head to the embedding whenever the config says so, even if a file
  // also carries an lm_head tensor. An untied one with blocks is not widened where they serve
  // it (packedOnly), as a projection.
  if (c.tiedEmbeddings) {
    w.lmHead = w.embed;
    w.lmHeadQuant = std::move(embedBlocks);
  } else {
    projection({{"lm_head.weight", {c.vocab, c.hidden}, vocabRows}}, w.lmHead, w.lmHeadQuant);
    // Only a few rows are read per step: the blocks stay where the file's reader put them.
    if (!w.embed.defined())
      w.embedQuant = std::move(embedBlocks);
  }
  step();
  // The blocks in the order a decode step reads them, in one region (packQuantized).
  std::vector<QuantizedMatrix *> readOrder;
  for (LayerWeights &l : w.layers)
    readOrder.insert(readOrder.end(), {&l.qkvQuant, &l.oQuant, &l.gateUpQuant, &l.downQuant});
  readOrder.push_back(&w.lmHeadQuant);
  packQuantized(readOrder);
  if (packedOnly && forms == ProjectionForms::BlocksOnly)
    for (QuantizedMatrix *m : readOrder) {
      m->tiled = true;
      for (QuantizedMatrix &part : m->rest)
        part.tiled = true;
    }
  if (c.tiedEmbeddings) // the packed blocks, not a second copy of them
    w.embedQuant = w.lmHeadQuant;
  return w;
}

int64_t ModelWeights::quantizedBytes() const {
  int64_t bytes = lmHeadQuant.bytes();
  for (const LayerWeights &l : layers)
    bytes += l.qkvQuant.bytes() + l.oQuant.bytes() + l.gateUpQuant.bytes() + l.downQuant.bytes();
  return bytes;
}

bool ModelWeights::widenedDropped() const {
  bool dropped = lmHeadQuant.defined() && !lmHead.defined();
  for (const LayerWeights &l : layers)
    dropped =
        dropped || !l.qkv.defined() || !l.o.defined() || !l.gateUp.defined() || !l.down.defined();
  return dropped;
}

bool ModelWeights::allQuantized() const {
  bool all = lmHeadQuant.defined();
  for (const LayerWeights &l : layers)
    all = all && l.qkvQuant.defined() && l.oQuant.defined() && l.gateUpQuant.defined() &&
          l.downQuant.defined();
  return all;
}

ModelWeights ModelWeights::load(const std::string &path, torch::ScalarType dtype,
                                const LoadProgress &progress, ProjectionForms forms,
                                ShardRank rank) {
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
    return assembleWeights(*config, source, dtype, progress, ProjectionForms::Widened, rank);
  }
  std::unique_ptr<gguf::GGUFFile> file = gguf::GGUFFile::open(path, error);
  if (!file)
    throw ModelLoadError(error);
  std::optional<schema::ModelConfig> config = schema::ModelConfig::fromGGUF(*file, error);
  if (!config)
    throw ModelLoadError(error);
  GGUFWeightSource source(*file, *config);
  return assembleWeights(*config, source, dtype, progress, forms, rank);
}

} // namespace nnsc

//===- CausalLMModules.cpp - one module applied on its own ------*- C++ -*-===//
//
// The module calls of traces (`norm(h)`, `lm_head(x)`, `layers[3].mlp(x)`): the same weights,
// kernels and arithmetic as the forward pass (linear() with the weight's GGUF blocks, the
// device's RMSNorm, siluMul or GELU), on any [..., in] value, with no hooks and no cache.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Models/CausalLM.h"

#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/SiluMul.h"
#include "nnsc/Runtime/Support/Error.h"

#include <stdexcept>

namespace nnsc {

torch::Tensor CausalLM::applyModule(int module, const torch::Tensor &input) const {
  const auto &modules = arch.modules();
  if (module < 0 || size_t(module) >= modules.size())
    throw InvalidInput("module index " + std::to_string(module) + " out of range");
  const schema::Module &m = modules[size_t(module)];
  const schema::ModelConfig &c = w.config;
  // This rank's sizes (the whole model's on one rank).
  const int64_t q = local.heads * c.headDim, kv = local.kvHeads * c.headDim;
  const int64_t inter = local.intermediate;
  // Rows [begin, begin + count) of a fused weight, its bias and its GGUF blocks.
  struct Rows {
    torch::Tensor weight, bias;
    QuantizedMatrix quant;
  };
  auto rows = [](const torch::Tensor &weight, const torch::Tensor &bias,
                 const QuantizedMatrix &quant, int64_t begin, int64_t count) {
    return Rows{weightRows(weight, begin, count), weightRows(bias, begin, count),
                quant.defined() ? quant.narrowRows(begin, count) : QuantizedMatrix()};
  };
  auto checkWidth = [&](int64_t width) {
    if (input.size(-1) != width)
      throw InvalidInput("module '" + m.path + "' takes width " + std::to_string(width) + ", got " +
                         std::to_string(input.size(-1)));
  };
  // The forward pass's linear() on the rows of a value of any rank.
  auto linear = [](const torch::Tensor &in, const torch::Tensor &weight, const torch::Tensor &bias,
                   const QuantizedMatrix &quant) {
    torch::Tensor out =
        nnsc::linear(in.reshape({-1, in.size(-1)}).contiguous(), weight, bias, quant);
    std::vector<int64_t> shape(in.sizes().begin(), in.sizes().end());
    shape.back() = out.size(-1);
    return out.view(shape);
  };
  // A column-parallel projection: this rank's output channels, gathered whole.
  auto columnParallel = [&](const Rows &r, ShardAxis axis) {
    checkWidth(r.weight.defined() ? r.weight.size(1) : r.quant.cols);
    torch::Tensor out = linear(input, r.weight, r.bias, r.quant);
    return tp ? gatherShards(out, out.dim() - 1, axis) : out;
  };
  // A row-parallel projection: this rank's input channels, partial sums all-reduced.
  auto rowParallel = [&](const torch::Tensor &in, const torch::Tensor &weight,
                         const QuantizedMatrix &quant, ShardAxis axis) {
    torch::Tensor out = linear(tp ? shardOf(in, in.dim() - 1, axis) : in, weight, {}, quant);
    reducePartial(out);
    return out;
  };
  auto norm = [&](const torch::Tensor &weight) {
    checkWidth(weight.size(0));
    return rmsNorm(input.reshape({-1, input.size(-1)}).contiguous(), weight, c.rmsNormEps)
        .view(input.sizes());
  };
  if (m.path == "lm_head") {
    checkWidth(c.hidden);
    torch::Tensor logits = linear(input, w.lmHead, {}, w.lmHeadQuant);
    if (!tp)
      return logits;
    const int64_t rowsIn = logits.numel() / logits.size(-1);
    torch::Tensor whole = gatherLogits(logits.reshape({rowsIn, -1}), /*everyRank=*/true);
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = c.vocab;
    return whole.view(shape);
  }
  if (m.path == "model.norm")
    return norm(w.norm);
  if (m.layer < 0)
    throw InvalidInput("module '" + m.path + "' cannot be called");
  const LayerWeights &l = w.layers[size_t(m.layer)];
  const std::string &name = m.name;
  const bool sandwich = c.traits().sandwichNorms;
  const bool silu = c.traits().activation == schema::Activation::Silu;
  if (name == "input_layernorm")
    return norm(l.inputNorm);
  if (name == "post_attention_layernorm")
    return norm(sandwich ? l.attnOutNorm : l.postNorm);
  if (name == "pre_feedforward_layernorm")
    return norm(l.postNorm);
  if (name == "post_feedforward_layernorm")
    return norm(l.mlpOutNorm);
  if (name == "q_norm")
    return norm(l.qNorm);
  if (name == "k_norm")
    return norm(l.kNorm);
  if (name == "q_proj")
    return columnParallel(rows(l.qkv, l.qkvBias, l.qkvQuant, 0, q), ShardAxis::Heads);
  if (name == "k_proj")
    return columnParallel(rows(l.qkv, l.qkvBias, l.qkvQuant, q, kv), ShardAxis::KVHeads);
  if (name == "v_proj")
    return columnParallel(rows(l.qkv, l.qkvBias, l.qkvQuant, q + kv, kv), ShardAxis::KVHeads);
  if (name == "o_proj") {
    checkWidth(c.heads * c.headDim);
    return rowParallel(input, l.o, l.oQuant, ShardAxis::Heads);
  }
  if (name == "gate_proj")
    return columnParallel(rows(l.gateUp, {}, l.gateUpQuant, 0, inter), ShardAxis::Intermediate);
  if (name == "up_proj")
    return columnParallel(rows(l.gateUp, {}, l.gateUpQuant, inter, inter), ShardAxis::Intermediate);
  if (name == "down_proj") {
    checkWidth(c.intermediate);
    return rowParallel(input, l.down, l.downQuant, ShardAxis::Intermediate);
  }
  if (name == "act_fn")
    return silu ? at::silu(input) : at::gelu(input, "tanh");
  if (name == "mlp") {
    // The layer's MLP with every site unbound: gate/up in one GEMM, SiLU fused into the
    // product, down_proj's partial sums reduced.
    checkWidth(c.hidden);
    torch::Tensor gu =
        nnsc::linear(input.reshape({-1, c.hidden}).contiguous(), l.gateUp, {}, l.gateUpQuant);
    torch::Tensor gate = gu.narrow(1, 0, inter), up = gu.narrow(1, inter, inter);
    torch::Tensor act = silu ? siluMul(gate, up) : at::gelu(gate, "tanh") * up;
    torch::Tensor out = nnsc::linear(act, l.down, {}, l.downQuant);
    reducePartial(out);
    return out.view(input.sizes());
  }
  throw InvalidInput("module '" + m.path + "' (" + m.type + ") cannot be called from a bundle");
}

} // namespace nnsc

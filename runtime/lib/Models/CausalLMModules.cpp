//===- CausalLMModules.cpp - one module applied on its own ------*- C++ -*-===//
//
// The module calls of traces (`norm(h)`, `lm_head(x)`, `layers[3].mlp(x)`): the same weights
// and arithmetic as the forward pass, on any [rows, in] value, with no hooks and no cache.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Models/CausalLM.h"

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include <stdexcept>

namespace nnsc {

torch::Tensor CausalLM::applyModule(int module, const torch::Tensor &input) const {
  const auto &modules = arch.modules();
  if (module < 0 || size_t(module) >= modules.size())
    throw std::invalid_argument("module index " + std::to_string(module) + " out of range");
  const schema::Module &m = modules[size_t(module)];
  const schema::ModelConfig &c = w.config;
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim, inter = c.intermediate;
  auto rows = [](const torch::Tensor &t, int64_t begin, int64_t count) {
    return t.narrow(0, begin, count);
  };
  auto biasRows = [](const torch::Tensor &bias, int64_t begin, int64_t count) {
    return bias.defined() ? bias.narrow(0, begin, count) : torch::Tensor();
  };
  auto linear = [&](const torch::Tensor &weight, const torch::Tensor &bias) {
    if (input.size(-1) != weight.size(1))
      throw std::invalid_argument("module '" + m.path + "' takes width " +
                                  std::to_string(weight.size(1)) + ", got " +
                                  std::to_string(input.size(-1)));
    return bias.defined() ? at::linear(input, weight, bias) : at::linear(input, weight);
  };
  auto norm = [&](const torch::Tensor &weight) {
    if (input.size(-1) != weight.size(0))
      throw std::invalid_argument("module '" + m.path + "' takes width " +
                                  std::to_string(weight.size(0)) + ", got " +
                                  std::to_string(input.size(-1)));
    return rmsNorm(input.reshape({-1, input.size(-1)}).contiguous(), weight, c.rmsNormEps)
        .view(input.sizes());
  };
  if (m.path == "lm_head")
    return linear(w.lmHead, {});
  if (m.path == "model.norm")
    return norm(w.norm);
  if (m.layer < 0)
    throw std::invalid_argument("module '" + m.path + "' cannot be called");
  const LayerWeights &l = w.layers[size_t(m.layer)];
  const std::string &name = m.name;
  if (name == "input_layernorm")
    return norm(l.inputNorm);
  if (name == "post_attention_layernorm")
    return norm(l.postNorm);
  if (name == "q_proj")
    return linear(rows(l.qkv, 0, q), biasRows(l.qkvBias, 0, q));
  if (name == "k_proj")
    return linear(rows(l.qkv, q, kv), biasRows(l.qkvBias, q, kv));
  if (name == "v_proj")
    return linear(rows(l.qkv, q + kv, kv), biasRows(l.qkvBias, q + kv, kv));
  if (name == "o_proj")
    return linear(l.o, {});
  if (name == "gate_proj")
    return linear(rows(l.gateUp, 0, inter), {});
  if (name == "up_proj")
    return linear(rows(l.gateUp, inter, inter), {});
  if (name == "down_proj")
    return linear(l.down, {});
  if (name == "act_fn")
    return at::silu(input);
  if (name == "mlp") {
    torch::Tensor gu = linear(l.gateUp, {});
    return at::linear(at::silu(gu.narrow(-1, 0, inter)) * gu.narrow(-1, inter, inter), l.down);
  }
  throw std::invalid_argument("module '" + m.path + "' (" + m.type +
                              ") cannot be called from a bundle");
}

} // namespace nnsc

//===- CausalLM.cpp - Llama-family decoder over a flat batch ----*- C++ -*-===//

#include "nnsc/Runtime/Models/CausalLM.h"

#include "nnsc/Runtime/Attention/AttentionPattern.h"
#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Layers/RMSNorm.h"
#include "nnsc/Runtime/Layers/SiluMul.h"
#include "nnsc/Runtime/Models/PhaseProfile.h"

#include <cmath>
#include <tuple>

namespace nnsc {

namespace {

/// Runs `f` with its wall time charged to `phase` (NNSC_PROFILE).
template <typename F> decltype(auto) timed(Phase phase, F &&f) {
  ScopedPhase scope(phase);
  return f();
}

} // namespace

CausalLM::CausalLM(ModelWeights weights, const DeviceKernels &kernels,
                   std::shared_ptr<TensorParallelGroup> group)
    : w(std::move(weights)), local(w.config), kernels(&kernels), arch(w.config),
      rope(w.config, w.embed.device()), scale(1.0 / std::sqrt(double(w.config.headDim))) {
  if (w.shard.heads == 0) // weights assembled by hand: the whole model
    w.shard = TensorShard::whole(w.config);
  const int ranks = group ? group->size() : 1;
  if (ranks != w.shard.size || (group && group->rank() != w.shard.rank))
    throw std::invalid_argument("the weights are rank " + std::to_string(w.shard.rank) + " of " +
                                std::to_string(w.shard.size) + ", the process group rank " +
                                std::to_string(group ? group->rank() : 0) + " of " +
                                std::to_string(ranks));
  if (ranks > 1)
    tp = std::move(group);
  local.heads = w.shard.heads;
  local.kvHeads = w.shard.kvHeads;
  local.intermediate = w.shard.intermediate;
  auto in = [&](const std::string &module) {
    int m = arch.findModule(module);
    return m < 0 ? -1 : arch.modules()[size_t(m)].inputSite;
  };
  auto out = [&](const std::string &module) {
    int m = arch.findModule(module);
    return m < 0 ? -1 : arch.modules()[size_t(m)].outputSite;
  };
  embedIn = in("model.embed_tokens");
  embedOut = out("model.embed_tokens");
  normIn = in("model.norm");
  normOut = out("model.norm");
  lmHeadIn = in("lm_head");
  lmHeadOut = out("lm_head");
  logitsSite = arch.findSite("logits");
  for (int64_t i = 0; i < w.config.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    LayerSites s;
    s.layerIn = in(p);
    s.layerOut = out(p);
    s.inNormIn = in(p + ".input_layernorm");
    s.inNormOut = out(p + ".input_layernorm");
    s.attnIn = in(p + ".self_attn");
    s.attnOut = out(p + ".self_attn");
    s.qIn = in(p + ".self_attn.q_proj");
    s.qOut = out(p + ".self_attn.q_proj");
    s.qNormIn = in(p + ".self_attn.q_norm");
    s.qNormOut = out(p + ".self_attn.q_norm");
    s.kIn = in(p + ".self_attn.k_proj");
    s.kOut = out(p + ".self_attn.k_proj");
    s.kNormIn = in(p + ".self_attn.k_norm");
    s.kNormOut = out(p + ".self_attn.k_norm");
    s.vIn = in(p + ".self_attn.v_proj");
    s.vOut = out(p + ".self_attn.v_proj");
    s.oIn = in(p + ".self_attn.o_proj");
    s.oOut = out(p + ".self_attn.o_proj");
    s.pattern = arch.findSite(p + ".self_attn.pattern");
    s.postNormIn = in(p + ".post_attention_layernorm");
    s.postNormOut = out(p + ".post_attention_layernorm");
    s.mlpIn = in(p + ".mlp");
    s.mlpOut = out(p + ".mlp");
    s.gateIn = in(p + ".mlp.gate_proj");
    s.gateOut = out(p + ".mlp.gate_proj");
    s.actIn = in(p + ".mlp.act_fn");
    s.actOut = out(p + ".mlp.act_fn");
    s.upIn = in(p + ".mlp.up_proj");
    s.upOut = out(p + ".mlp.up_proj");
    s.downIn = in(p + ".mlp.down_proj");
    s.downOut = out(p + ".mlp.down_proj");
    s.first = s.layerIn;
    s.last = s.layerOut;
    layerSites.push_back(s);
  }
}

void CausalLM::packWeights() const {
  for (const LayerWeights &l : w.layers)
    for (const torch::Tensor &weight : {l.qkv, l.o, l.gateUp, l.down})
      oneDnnPack(weight);
  oneDnnPack(w.lmHead);
}

torch::Tensor CausalLM::headNorm(const torch::Tensor &x, const torch::Tensor &weight) const {
  // [T, heads, D]: RMSNorm over head_dim, as Qwen3's q_norm/k_norm.
  return rmsNorm(x.reshape({-1, x.size(-1)}), weight, w.config.rmsNormEps).view(x.sizes());
}

void CausalLM::reducePartial(torch::Tensor &partial) const {
  if (tp)
    timed(Phase::Communication, [&] { tp->allReduce(partial); });
}

void CausalLM::rowParallelAdd(torch::Tensor &x, const torch::Tensor &in,
                              const torch::Tensor &weight, const QuantizedMatrix &quant,
                              Phase phase) const {
  if (!tp) {
    timed(phase, [&] { nnsc::linearAdd(x, in, weight, quant); });
    return;
  }
  torch::Tensor partial = timed(phase, [&] { return nnsc::linear(in, weight, {}, quant); });
  reducePartial(partial);
  x.add_(partial);
}

torch::Tensor CausalLM::gatherShards(const torch::Tensor &shard, int64_t dim,
                                     ShardAxis axis) const {
  if (!tp)
    return shard;
  std::vector<torch::Tensor> parts =
      timed(Phase::Communication, [&] { return tp->allGather(shard); });
  // Ranks that hold the same replicated KV heads contribute them once.
  if (axis == ShardAxis::KVHeads && w.shard.kvReplicas > 1) {
    std::vector<torch::Tensor> distinct;
    for (size_t r = 0; r < parts.size(); r += size_t(w.shard.kvReplicas))
      distinct.push_back(parts[r]);
    parts.swap(distinct);
  }
  return torch::cat(parts, dim);
}

torch::Tensor CausalLM::shardOf(const torch::Tensor &value, int64_t dim, ShardAxis axis) const {
  if (!tp)
    return value;
  const TensorShard &s = w.shard;
  const auto [begin, count, whole] =
      axis == ShardAxis::Heads ? std::tuple{s.headBegin, s.heads, w.config.heads}
      : axis == ShardAxis::KVHeads
          ? std::tuple{s.kvHeadBegin, s.kvHeads, w.config.kvHeads}
          : std::tuple{s.interBegin, s.intermediate, w.config.intermediate};
  const int64_t unit = value.size(dim) / whole;
  return value.narrow(dim, begin * unit, count * unit).contiguous();
}

void CausalLM::fireSharded(const HookDispatch &hooks, int site, torch::Tensor &value, int64_t dim,
                           ShardAxis axis) const {
  if (site < 0 || !hooks.bound(site))
    return;
  torch::Tensor whole = tp ? gatherShards(value, dim, axis) : value.contiguous();
  hooks.fire(site, whole);
  value = tp ? shardOf(whole, dim, axis) : whole;
}

torch::Tensor CausalLM::embed(const torch::Tensor &tokens) const {
  if (!tp)
    return at::embedding(w.embed, tokens);
  const TensorShard &s = w.shard;
  torch::Tensor ids = tokens - s.vocabBegin;
  torch::Tensor other = (ids < 0) | (ids >= s.vocabCount);
  torch::Tensor x = at::embedding(w.embed, ids.clamp(0, s.vocabCount - 1));
  x.masked_fill_(other.unsqueeze(1), 0);
  reducePartial(x);
  return x;
}

torch::Tensor CausalLM::gatherLogits(const torch::Tensor &logits, bool everyRank) const {
  if (!tp)
    return logits;
  torch::Tensor padded = logits;
  if (logits.size(1) < w.shard.vocabPerRank) // the last rank's rows, fewer
    padded = at::constant_pad_nd(logits, {0, w.shard.vocabPerRank - logits.size(1)});
  std::vector<torch::Tensor> parts = timed(
      Phase::Communication, [&] { return everyRank ? tp->allGather(padded) : tp->gather(padded); });
  if (parts.empty())
    return logits.narrow(1, 0, 0);
  return torch::cat(parts, 1).narrow(1, 0, w.config.vocab);
}

torch::Tensor CausalLM::attention(int64_t index, torch::Tensor q, torch::Tensor k, torch::Tensor v,
                                  StepState &step) const {
  torch::Tensor &kCache = step.cache.k[size_t(index)];
  torch::Tensor &vCache = step.cache.v[size_t(index)];
  q = timed(Phase::RopeStore, [&] {
    return kernels->ropeAndStoreKV(q, k, v, step.cos, step.sin, kCache, vCache, step.meta);
  });
  torch::Tensor out = timed(Phase::Attention, [&] {
    return kernels->attention(q, kCache, vCache, step.meta, scale, step.cache.absentOf(index));
  });
  return out.reshape({out.size(0), -1});
}

torch::Tensor CausalLM::patternAttention(int64_t index, int pattern, torch::Tensor q,
                                         torch::Tensor k, torch::Tensor v, StepState &step,
                                         const HookDispatch &hooks) const {
  torch::Tensor &kCache = step.cache.k[size_t(index)];
  torch::Tensor &vCache = step.cache.v[size_t(index)];
  q = timed(Phase::RopeStore, [&] {
    return kernels->ropeAndStoreKV(q, k, v, step.cos, step.sin, kCache, vCache, step.meta);
  });
  torch::Tensor probs = timed(Phase::Attention, [&] {
    return attentionPattern(q, kCache, step.meta, scale, step.cache.absentOf(index));
  });
  fireSharded(hooks, pattern, probs, 1, ShardAxis::Heads); // [tokens, heads, S]
  torch::Tensor out = timed(Phase::Attention, [&] {
    return applyAttentionPattern(probs, vCache, step.meta, q.scalar_type());
  });
  return out.reshape({out.size(0), -1});
}

void CausalLM::fusedLayer(int64_t index, torch::Tensor &x, StepState &step) const {
  const LayerWeights &l = w.layers[size_t(index)];
  const schema::ModelConfig &c = local;
  const int64_t t = x.size(0), q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;

  torch::Tensor h = timed(Phase::Norm, [&] { return rmsNorm(x, l.inputNorm, c.rmsNormEps); });
  torch::Tensor qkv =
      timed(Phase::QKVProj, [&] { return nnsc::linear(h, l.qkv, l.qkvBias, l.qkvQuant); });
  torch::Tensor qs = qkv.narrow(1, 0, q).view({t, c.heads, c.headDim});
  torch::Tensor ks = qkv.narrow(1, q, kv).view({t, c.kvHeads, c.headDim});
  torch::Tensor vs = qkv.narrow(1, q + kv, kv).view({t, c.kvHeads, c.headDim});
  if (c.qkNorm) {
    qs = headNorm(qs, l.qNorm);
    ks = headNorm(ks, l.kNorm);
  }
  torch::Tensor attn = attention(index, qs, ks, vs, step);
  rowParallelAdd(x, attn, l.o, l.oQuant, Phase::OProj);

  torch::Tensor h2 = timed(Phase::Norm, [&] { return rmsNorm(x, l.postNorm, c.rmsNormEps); });
  torch::Tensor gu =
      timed(Phase::GateUpProj, [&] { return nnsc::linear(h2, l.gateUp, {}, l.gateUpQuant); });
  torch::Tensor act = timed(Phase::Activation, [&] {
    return siluMul(gu.narrow(1, 0, c.intermediate), gu.narrow(1, c.intermediate, c.intermediate));
  });
  rowParallelAdd(x, act, l.down, l.downQuant, Phase::DownProj);
}

void CausalLM::hookedLayer(int64_t index, torch::Tensor &x, StepState &step,
                           const HookDispatch &hooks) const {
  const LayerWeights &l = w.layers[size_t(index)];
  const LayerSites &s = layerSites[size_t(index)];
  const schema::ModelConfig &c = local;
  const int64_t t = x.size(0), q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
  const int64_t inter = c.intermediate;

  auto bound = [&](int site) { return site >= 0 && hooks.bound(site); };
  // Fires `site` on `value` (made contiguous so hooks and kernels see plain rows).
  auto fire = [&](int site, torch::Tensor &value) {
    if (bound(site)) {
      value = value.contiguous();
      hooks.fire(site, value);
    }
  };
  // The value a module receives when it shares its input with later consumers: a copy if
  // the module's input site is bound, so a replacement reaches this module only.
  auto ownInput = [&](int site, const torch::Tensor &value) {
    if (!bound(site))
      return value;
    torch::Tensor copy = value.clone();
    hooks.fire(site, copy);
    return copy;
  };
  // `.skip()`: after the module's input site fired, the rows of a hook that skips the module
  // hold the module's output. They are kept and become the module's output before its output
  // site fires. The module still runs on them and its result there is dropped: row-wise
  // modules cannot tell, and a skipped layer or attention writes K/V for those rows
  // (docs/Runtime.md, "Skipping a module").
  auto keepSkipped = [&](int inSite, const torch::Tensor &input) {
    std::vector<std::pair<TokenGroup, torch::Tensor>> kept;
    if (bound(inSite))
      for (const TokenGroup &g : hooks.skippedRows(inSite))
        kept.emplace_back(g, input.narrow(0, g.tokenStart, g.tokenCount).clone());
    return kept;
  };
  auto restoreSkipped = [](torch::Tensor &output, const auto &kept) {
    for (const auto &[g, value] : kept)
      output.narrow(0, g.tokenStart, g.tokenCount).copy_(value);
  };
  // A sharded site's value ([T, heads * D], [T, heads, D] or [T, I]: split along dim 1).
  auto fireShard = [&](int site, torch::Tensor &value, ShardAxis axis) {
    fireSharded(hooks, site, value, 1, axis);
  };
  // o_proj / down_proj: the projection's output is added to the residual. When nobody sees it
  // on its own (its site and the module's output site unbound, no skipped rows) the add
  // happens inside the GEMM.
  auto addToResidual = [&](const torch::Tensor &input, const torch::Tensor &weight,
                           const QuantizedMatrix &quant, Phase phase, int projOut, int moduleOut,
                           const auto &skipped) {
    if (!bound(projOut) && !bound(moduleOut) && skipped.empty()) {
      rowParallelAdd(x, input, weight, quant, phase);
      return;
    }
    torch::Tensor out = timed(phase, [&] { return nnsc::linear(input, weight, {}, quant); });
    reducePartial(out);
    fire(projOut, out);
    restoreSkipped(out, skipped);
    fire(moduleOut, out);
    x.add_(out);
  };
  auto rows = [&](const torch::Tensor &weight, int64_t begin, int64_t count) {
    return weight.narrow(0, begin, count);
  };
  auto quantRows = [&](const QuantizedMatrix &quant, int64_t begin, int64_t count) {
    return quant.defined() ? quant.narrowRows(begin, count) : QuantizedMatrix();
  };
  auto biasRows = [&](int64_t begin, int64_t count) {
    return l.qkvBias.defined() ? l.qkvBias.narrow(0, begin, count) : torch::Tensor();
  };

  fire(s.layerIn, x);
  const auto layerSkipped = keepSkipped(s.layerIn, x);
  torch::Tensor h = timed(
      Phase::Norm, [&] { return rmsNorm(ownInput(s.inNormIn, x), l.inputNorm, c.rmsNormEps); });
  fire(s.inNormOut, h);
  fire(s.attnIn, h);
  const auto attnSkipped = keepSkipped(s.attnIn, h);

  // q, k and v read the same input; a bound input site of one of them gets its own copy.
  const bool splitQKV = bound(s.qIn) || bound(s.kIn) || bound(s.vIn);
  torch::Tensor qkv;
  if (!splitQKV)
    qkv = timed(Phase::QKVProj, [&] { return nnsc::linear(h, l.qkv, l.qkvBias, l.qkvQuant); });
  auto project = [&](int inSite, int64_t begin, int64_t count, bool lastConsumer) {
    if (!splitQKV)
      return qkv.narrow(1, begin, count);
    torch::Tensor input = lastConsumer ? h : ownInput(inSite, h);
    if (lastConsumer)
      fire(inSite, input);
    return timed(Phase::QKVProj, [&] {
      return nnsc::linear(input, rows(l.qkv, begin, count), biasRows(begin, count),
                          quantRows(l.qkvQuant, begin, count));
    });
  };
  torch::Tensor qs = project(s.qIn, 0, q, false);
  fireShard(s.qOut, qs, ShardAxis::Heads);
  torch::Tensor q3 = qs.view({t, c.heads, c.headDim});
  if (c.qkNorm) {
    fireShard(s.qNormIn, q3, ShardAxis::Heads);
    q3 = headNorm(q3, l.qNorm);
    fireShard(s.qNormOut, q3, ShardAxis::Heads);
  }
  torch::Tensor ks = project(s.kIn, q, kv, false);
  fireShard(s.kOut, ks, ShardAxis::KVHeads);
  torch::Tensor k3 = ks.view({t, c.kvHeads, c.headDim});
  if (c.qkNorm) {
    fireShard(s.kNormIn, k3, ShardAxis::KVHeads);
    k3 = headNorm(k3, l.kNorm);
    fireShard(s.kNormOut, k3, ShardAxis::KVHeads);
  }
  torch::Tensor vs = project(s.vIn, q + kv, kv, true);
  fireShard(s.vOut, vs, ShardAxis::KVHeads);

  torch::Tensor v3 = vs.view({t, c.kvHeads, c.headDim});
  torch::Tensor attn = bound(s.pattern)
                           ? patternAttention(index, s.pattern, q3, k3, v3, step, hooks)
                           : attention(index, q3, k3, v3, step);
  // The rows of a skipped layer or self-attention leave no K/V in this layer for later steps,
  // as in transformers, where the skipped module never updates its cache.
  if (!layerSkipped.empty() || !attnSkipped.empty()) {
    const torch::Tensor slotMapping = step.meta.slotMapping.to(torch::kInt64).contiguous();
    const int64_t *mapping = slotMapping.data_ptr<int64_t>();
    std::vector<int64_t> slots;
    for (const auto *skipped : {&layerSkipped, &attnSkipped})
      for (const auto &[g, value] : *skipped)
        for (int64_t r = g.tokenStart; r < g.tokenStart + g.tokenCount; ++r)
          if (mapping[r] >= 0)
            slots.push_back(mapping[r]);
    step.cache.markAbsent(index, slots);
  }
  fireShard(s.oIn, attn, ShardAxis::Heads);
  addToResidual(attn, l.o, l.oQuant, Phase::OProj, s.oOut, s.attnOut, attnSkipped);

  torch::Tensor h2 = timed(
      Phase::Norm, [&] { return rmsNorm(ownInput(s.postNormIn, x), l.postNorm, c.rmsNormEps); });
  fire(s.postNormOut, h2);
  fire(s.mlpIn, h2);
  const auto mlpSkipped = keepSkipped(s.mlpIn, h2);

  const bool splitGateUp = bound(s.gateIn) || bound(s.upIn);
  torch::Tensor gu, g, u;
  if (splitGateUp)
    g = timed(Phase::GateUpProj, [&] {
      return nnsc::linear(ownInput(s.gateIn, h2), rows(l.gateUp, 0, inter), {},
                          quantRows(l.gateUpQuant, 0, inter));
    });
  else
    gu = timed(Phase::GateUpProj, [&] { return nnsc::linear(h2, l.gateUp, {}, l.gateUpQuant); }),
    g = gu.narrow(1, 0, inter);
  fireShard(s.gateOut, g, ShardAxis::Intermediate);
  fireShard(s.actIn, g, ShardAxis::Intermediate);
  auto upProj = [&] {
    if (!splitGateUp)
      return gu.narrow(1, inter, inter);
    fire(s.upIn, h2);
    return timed(Phase::GateUpProj, [&] {
      return nnsc::linear(h2, rows(l.gateUp, inter, inter), {},
                          quantRows(l.gateUpQuant, inter, inter));
    });
  };
  torch::Tensor p;
  if (!bound(s.actOut) && !bound(s.upOut)) {
    // act_fn's and up_proj's outputs are seen by nobody but the product: one pass. up_proj
    // runs before SiLU here, which only its input site (h2, unchanged by SiLU) could tell.
    u = upProj();
    p = timed(Phase::Activation, [&] { return siluMul(g, u); });
  } else {
    torch::Tensor a = timed(Phase::Activation, [&] { return at::silu(g); });
    fireShard(s.actOut, a, ShardAxis::Intermediate);
    u = upProj();
    fireShard(s.upOut, u, ShardAxis::Intermediate);
    p = timed(Phase::Activation, [&] { return a * u; });
  }
  fireShard(s.downIn, p, ShardAxis::Intermediate);
  addToResidual(p, l.down, l.downQuant, Phase::DownProj, s.downOut, s.mlpOut, mlpSkipped);
  restoreSkipped(x, layerSkipped);
  fire(s.layerOut, x);
}

torch::Tensor CausalLM::forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                                KVCache &cache, const HookDispatch *hooks) const {
  TORCH_CHECK(tokens.dim() == 1 && tokens.scalar_type() == torch::kInt64,
              "CausalLM::forward: tokens must be a [tokens] int64 tensor, got ", tokens.sizes(),
              " ", tokens.scalar_type());
  TORCH_CHECK(meta.positions.defined() && meta.positions.size(0) == tokens.size(0),
              "CausalLM::forward: ", tokens.size(0), " tokens but ",
              meta.positions.defined() ? meta.positions.size(0) : 0, " positions");
  TORCH_CHECK(int64_t(cache.k.size()) == w.config.layers, "CausalLM::forward: the KV cache has ",
              cache.k.size(), " layers, the model ", w.config.layers);
  if (hooks && hooks->empty())
    hooks = nullptr;

  if (hooks && hooks->bound(embedIn)) {
    torch::Tensor ids = tokens.clone();
    hooks->fire(embedIn, ids);
  }
  torch::Tensor x = timed(Phase::Embed, [&] { return embed(tokens); });
  if (hooks && hooks->bound(embedOut))
    hooks->fire(embedOut, x);

  auto [cos, sin] = rope.cosSin(meta.positions, w.dtype);
  // This step writes its rows' K/V in every layer; marks a skipping sequence left in these
  // slots before its blocks were freed no longer apply.
  cache.clearAbsent(meta.slotMapping);
  StepState step{meta, cache, cos, sin};
  for (int64_t i = 0; i < w.config.layers; ++i) {
    const LayerSites &s = layerSites[size_t(i)];
    if (hooks && hooks->anyBound(s.first, s.last))
      hookedLayer(i, x, step, *hooks);
    else
      fusedLayer(i, x, step);
  }

  // RMSNorm is per row: without hooks on the final norm only the sampled rows are normalized.
  torch::Tensor hidden;
  if (hooks && (hooks->bound(normIn) || hooks->bound(normOut))) {
    hooks->fire(normIn, x);
    hidden = rmsNorm(x, w.norm, w.config.rmsNormEps);
    hooks->fire(normOut, hidden);
    hidden = hidden.index_select(0, meta.sampleRows);
  } else {
    hidden = timed(Phase::Norm, [&] {
      return rmsNorm(x.index_select(0, meta.sampleRows), w.norm, w.config.rmsNormEps);
    });
  }
  if (hooks && hooks->bound(lmHeadIn))
    hooks->fireSampled(lmHeadIn, hidden);
  torch::Tensor logits =
      timed(Phase::LMHead, [&] { return nnsc::linear(hidden, w.lmHead, {}, w.lmHeadQuant); });
  // Rank 0 samples; the other ranks need the logits only for hooks that read them.
  logits = gatherLogits(logits, hooks && (hooks->bound(lmHeadOut) || hooks->bound(logitsSite)));
  if (hooks && hooks->bound(lmHeadOut))
    hooks->fireSampled(lmHeadOut, logits);
  return logits.to(torch::kFloat32);
}

} // namespace nnsc

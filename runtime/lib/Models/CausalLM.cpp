//===- CausalLM.cpp - Llama-family decoder over a flat batch ----*- C++ -*-===//

#include "nnsc/Runtime/Models/CausalLM.h"

#include "nnsc/Runtime/Attention/AttentionPattern.h"
#include "nnsc/Runtime/Kernels/QuantGemv.h"
#include "nnsc/Runtime/Kernels/ThreadPool.h"
#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Models/PhaseProfile.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>

namespace nnsc {

namespace {

/// The config of the local layers' RoPE: their base, unscaled.
schema::ModelConfig localRopeConfig(schema::ModelConfig config) {
  config.ropeTheta = config.ropeLocalTheta;
  config.ropeScaling = {};
  return config;
}

/// Whether DecoderLayer::runOnRows can run these weights' unhooked layers: on the CPU, every
/// product on blocks the quantized kernels read (`allQuantized`, with a bias of the compute
/// dtype), one rank, no q_norm/k_norm; NNSC_ROW_LANE=off turns it off (RuntimeOptions).
bool rowLaneServes(const ModelWeights &w, bool allQuantized, int ranks) {
  if (!RuntimeOptions::get().rowLane || ranks > 1 || w.config.qkNorm || !allQuantized ||
      !w.norm.device().is_cpu() || !kernels::quantIsaSupported(kernels::QuantIsa::Avx2))
    return false;
  for (const LayerWeights &l : w.layers)
    if (l.qkvBias.defined() && l.qkvBias.scalar_type() != w.dtype)
      return false;
  return true;
}

} // namespace

CausalLM::CausalLM(ModelWeights weights, const DeviceKernels &kernels,
                   std::shared_ptr<TensorParallelGroup> group)
    : w(std::move(weights)), allQuantized(w.allQuantized()), widenedDropped(w.widenedDropped()),
      local(w.config), kernels(&kernels), arch(w.config), rope(w.config, w.norm.device()),
      localRope(localRopeConfig(w.config), w.norm.device()),
      scale(1.0 / std::sqrt(w.config.queryPreAttnScalar > 0 ? w.config.queryPreAttnScalar
                                                            : double(w.config.headDim))) {
  if (w.config.traits().scaledEmbedding) // as transformers: a float32 scalar cast to the dtype
    embedScale = torch::scalar_tensor(std::sqrt(double(w.config.hidden)), torch::kFloat32)
                     .to(w.norm.device(), w.dtype);
  if (w.shard.heads == 0) // weights assembled by hand: the whole model
    w.shard = TensorShard::whole(w.config);
  const int ranks = group ? group->size() : 1;
  if (ranks != w.shard.size || (group && group->rank() != w.shard.rank))
    throw InvalidInput("the weights are rank " + std::to_string(w.shard.rank) + " of " +
                       std::to_string(w.shard.size) + ", the process group rank " +
                       std::to_string(group ? group->rank() : 0) + " of " + std::to_string(ranks));
  if (ranks > 1)
    tp = std::move(group);
  rowLane = rowLaneServes(w, allQuantized, ranks);
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
    const bool sandwich = w.config.traits().sandwichNorms;
    const std::string mlpNorm =
        sandwich ? ".pre_feedforward_layernorm" : ".post_attention_layernorm";
    s.postNormIn = in(p + mlpNorm);
    s.postNormOut = out(p + mlpNorm);
    s.attnOutNormIn = sandwich ? in(p + ".post_attention_layernorm") : -1;
    s.attnOutNormOut = sandwich ? out(p + ".post_attention_layernorm") : -1;
    s.mlpOutNormIn = in(p + ".post_feedforward_layernorm");
    s.mlpOutNormOut = out(p + ".post_feedforward_layernorm");
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
    for (auto [weight, blocks] :
         {std::pair{&l.qkv, &l.qkvQuant}, std::pair{&l.o, &l.oQuant},
          std::pair{&l.gateUp, &l.gateUpQuant}, std::pair{&l.down, &l.downQuant}}) {
      if (weight->defined())
        oneDnnPack(*weight);
      else // loaded without its widened copy: packed from the blocks, one at a time
        oneDnnPackQuantized(*blocks, w.dtype);
    }
  // Without its widened copy the lm_head is packed on its first product over the row limit:
  // a batch that wide may never come, and the copy is as large as the embedding.
  if (w.lmHead.defined())
    oneDnnPack(w.lmHead);
}

torch::Tensor CausalLM::headNorm(const torch::Tensor &x, const torch::Tensor &weight) const {
  // [T, heads, D]: RMSNorm over head_dim, as Qwen3's q_norm/k_norm.
  return rmsNorm(x.reshape({-1, x.size(-1)}), weight, w.config.rmsNormEps).view(x.sizes());
}

torch::Tensor CausalLM::attention(int64_t index, torch::Tensor q, torch::Tensor k, torch::Tensor v,
                                  StepState &step) const {
  torch::Tensor &kCache = step.cache.k[size_t(index)];
  torch::Tensor &vCache = step.cache.v[size_t(index)];
  const bool localLayer = w.config.isLocalLayer(index);
  q = timed(Phase::RopeStore, [&] {
    return kernels->ropeAndStoreKV(q, k, v, localLayer ? step.localCos : step.cos,
                                   localLayer ? step.localSin : step.sin, kCache, vCache,
                                   step.meta);
  });
  torch::Tensor out = timed(Phase::Attention, [&] {
    return kernels->attention(q, kCache, vCache, step.meta, scale, step.cache.absentOf(index),
                              w.config.attentionWindow(index));
  });
  return out.reshape({out.size(0), -1});
}

torch::Tensor CausalLM::patternAttention(int64_t index, int pattern, torch::Tensor q,
                                         torch::Tensor k, torch::Tensor v, StepState &step,
                                         const HookDispatch &hooks) const {
  torch::Tensor &kCache = step.cache.k[size_t(index)];
  torch::Tensor &vCache = step.cache.v[size_t(index)];
  const bool localLayer = w.config.isLocalLayer(index);
  q = timed(Phase::RopeStore, [&] {
    return kernels->ropeAndStoreKV(q, k, v, localLayer ? step.localCos : step.cos,
                                   localLayer ? step.localSin : step.sin, kCache, vCache,
                                   step.meta);
  });
  torch::Tensor probs = timed(Phase::Attention, [&] {
    return attentionPattern(q, kCache, step.meta, scale, step.cache.absentOf(index),
                            w.config.attentionWindow(index));
  });
  fireSharded(hooks, pattern, probs, 1, ShardAxis::Heads); // [tokens, heads, S]
  torch::Tensor out = timed(Phase::Attention, [&] {
    return applyAttentionPattern(probs, vCache, step.meta, q.scalar_type());
  });
  return out.reshape({out.size(0), -1});
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
  torch::Tensor x = timed(Phase::Embed, [&] {
    torch::Tensor e = embed(tokens);
    return embedScale.defined() ? e.mul_(embedScale) : e;
  });
  if (hooks && hooks->bound(embedOut))
    hooks->fire(embedOut, x);

  auto [cos, sin] = rope.cosSin(meta.positions, w.dtype);
  // This step writes its rows' K/V in every layer; marks a skipping sequence left in these
  // slots before its blocks were freed no longer apply.
  cache.clearAbsent(meta.slotMapping);
  StepState step{meta, cache, cos, sin, {}, {}};
  if (w.config.slidingWindow > 0)
    std::tie(step.localCos, step.localSin) = localRope.cosSin(meta.positions, w.dtype);
  // A decode-sized step runs every product on the thread pool: its workers wait for the next
  // one polling, through attention and hooks, instead of sleeping and being woken.
  std::optional<kernels::ThreadPool::KeepPolling> polling;
  if (x.device().is_cpu() && linearRunsOnThreadPool(tokens.size(0), w.dtype, allQuantized,
                                                    !widenedDropped, w.lmHeadQuant.tiled))
    polling.emplace();
  for (int64_t i = 0; i < w.config.layers; ++i) {
    const LayerSites &s = layerSites[size_t(i)];
    decoderLayer(i, x, step, hooks && hooks->anyBound(s.first, s.last) ? hooks : nullptr);
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

//===- DecoderLayer.cpp - the one decoder-layer schedule --------*- C++ -*-===//
//
// CausalLM::decoderLayer: a decoder layer as a schedule of named steps (DecoderLayer::run),
// each step the transformers module it mirrors; a family's differences (Gemma's norms around
// each block, GELU, the order of q_norm/k_norm) are its FamilyTraits. Between steps sit the
// hook sites, each one `bound()` branch when no request binds it. The fusions (q/k/v in one
// GEMM, gate/up in one GEMM, SiLU and the up product in one pass, the residual add inside the
// o_proj and down_proj GEMMs) stay on unless a bound site needs a value they hide; with no
// site bound this is the fused path, and there is no other. A layer with no site bound in a
// decode-sized CPU step runs the same fused steps with the same kernels on raw rows
// (runOnRows, "the row lane"), without the tensors the sites need.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Models/CausalLM.h"

#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/QuantizedLinear.h"
#include "nnsc/Runtime/Layers/RMSNorm.h"
#include "nnsc/Runtime/Layers/SiluMul.h"

namespace nnsc {

/// The rows a `.skip()` hook set at a module's input site, kept to become the module's output.
using SkippedRows = std::vector<std::pair<TokenGroup, torch::Tensor>>;

/// One layer on one step's rows; lives for one CausalLM::decoderLayer call.
class DecoderLayer {
public:
  DecoderLayer(const CausalLM &model, int64_t index, torch::Tensor &x, CausalLM::StepState &step,
               const HookDispatch *hooks)
      : m(model), l(model.w.layers[size_t(index)]), s(model.layerSites[size_t(index)]),
        c(model.local), traits(model.local.traits()), index(index), x(x), step(step), hooks(hooks),
        t(x.size(0)), qWidth(c.heads * c.headDim), kvWidth(c.kvHeads * c.headDim),
        inter(c.intermediate) {}

  /// The layer, in transformers' order:
  ///   x = x + self_attn(input_layernorm(x));  x = x + mlp(post_attention_layernorm(x))
  /// or, with the norms around each block (Gemma):
  ///   x = x + post_attention_layernorm(self_attn(input_layernorm(x)))
  ///   x = x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)))
  void run() {
    if (onRows()) {
      runOnRows();
      return;
    }
    fire(s.layerIn, x);
    const SkippedRows layerSkipped = keepSkipped(s.layerIn, x);

    torch::Tensor h = norm(s.inNormIn, s.inNormOut, l.inputNorm);
    fire(s.attnIn, h);
    const SkippedRows attnSkipped = keepSkipped(s.attnIn, h);
    torch::Tensor attn = selfAttention(h);
    if (!layerSkipped.empty() || !attnSkipped.empty())
      leaveNoKV({&layerSkipped, &attnSkipped});
    fireShard(s.oIn, attn, CausalLM::ShardAxis::Heads);
    addToResidual(attn, l.o, l.oQuant, Phase::OProj, s.oOut, s.attnOut, attnSkipped,
                  {l.attnOutNorm, s.attnOutNormIn, s.attnOutNormOut});

    torch::Tensor h2 = norm(s.postNormIn, s.postNormOut, l.postNorm);
    fire(s.mlpIn, h2);
    const SkippedRows mlpSkipped = keepSkipped(s.mlpIn, h2);
    torch::Tensor product = gatedActivation(h2);
    fireShard(s.downIn, product, CausalLM::ShardAxis::Intermediate);
    addToResidual(product, l.down, l.downQuant, Phase::DownProj, s.downOut, s.mlpOut, mlpSkipped,
                  {l.mlpOutNorm, s.mlpOutNormIn, s.mlpOutNormOut});

    restoreSkipped(x, layerSkipped);
    fire(s.layerOut, x);
  }

private:
  using ShardAxis = CausalLM::ShardAxis;

  //===--- The row lane ---------------------------------------------------===//

  /// Whether this layer runs on raw rows (runOnRows): on the CPU with no site of the layer
  /// bound, a step of up to quantDecodeMaxRows rows and every product on its blocks
  /// (CausalLM::rowLane says which models qualify).
  bool onRows() const {
    return m.rowLane && !hooks && x.device().is_cpu() && x.is_contiguous() &&
           t <= quantDecodeMaxRows(x.scalar_type(), l.qkvQuant.tiled);
  }

  /// The layer with no site bound, step for step the fused schedule of run() with the same
  /// kernels on the same values, but on raw rows: the norms, products and SiLU * up write
  /// per-thread buffers and the residual stream x in place, with no LibTorch call between
  /// kernels but those of attention (a decode step's products are a few microseconds each,
  /// and the tensors made and dispatched between them cost 15-20% of a batch-1 step,
  /// docs/Engine.md, "The row lane"). Its logits equal the fused path's bit for bit
  /// (lanes.test).
  void runOnRows() {
    const torch::ScalarType dtype = x.scalar_type();
    const int64_t hidden = x.size(1), qkvWidth = qWidth + 2 * kvWidth;
    const int64_t bytes = int64_t(x.element_size());
    // h (each norm's output), q/k/v, gate/up, SiLU(gate) * up: one buffer per thread, grown
    // to the largest step.
    thread_local std::vector<uint8_t> buffer;
    buffer.resize(size_t(t * (hidden + qkvWidth + 3 * inter) * bytes));
    uint8_t *h = buffer.data();
    uint8_t *qkv = h + t * hidden * bytes;
    uint8_t *gateUp = qkv + t * qkvWidth * bytes;
    uint8_t *product = gateUp + t * 2 * inter * bytes;
    void *residual = x.data_ptr();
    auto norm = [&](const torch::Tensor &weight) {
      timed(Phase::Norm,
            [&] { rmsNormRows(dtype, residual, weight.data_ptr(), h, t, hidden, c.rmsNormEps); });
    };

    norm(l.inputNorm);
    timed(Phase::QKVProj, [&] {
      quantizedProduct(l.qkvQuant, dtype, h, hidden, t,
                       l.qkvBias.defined() ? l.qkvBias.data_ptr() : nullptr, qkv, qkvWidth,
                       /*accumulate=*/false);
    });
    auto heads = [&](int64_t column, int64_t count) { // [T, count, D] of the q/k/v rows
      return torch::from_blob(qkv + column * bytes, {t, count, c.headDim}, {qkvWidth, c.headDim, 1},
                              x.options());
    };
    const torch::Tensor attn = m.attention(index, heads(0, c.heads), heads(qWidth, c.kvHeads),
                                           heads(qWidth + kvWidth, c.kvHeads), step);
    timed(Phase::OProj, [&] {
      quantizedProduct(l.oQuant, dtype, attn.data_ptr(), attn.stride(0), t, nullptr, residual,
                       hidden, /*accumulate=*/true);
    });

    norm(l.postNorm);
    timed(Phase::GateUpProj, [&] {
      quantizedProduct(l.gateUpQuant, dtype, h, hidden, t, nullptr, gateUp, 2 * inter,
                       /*accumulate=*/false);
    });
    timed(Phase::Activation, [&] {
      siluMulRows(dtype, gateUp, 2 * inter, gateUp + inter * bytes, 2 * inter, product, inter, t,
                  inter);
    });
    timed(Phase::DownProj, [&] {
      quantizedProduct(l.downQuant, dtype, product, inter, t, nullptr, residual, hidden,
                       /*accumulate=*/true);
    });
  }

  //===--- The steps ------------------------------------------------------===//

  /// input_layernorm / the MLP's input norm of the residual stream.
  torch::Tensor norm(int inSite, int outSite, const torch::Tensor &weight) {
    torch::Tensor h =
        timed(Phase::Norm, [&] { return m.rmsNorm(ownInput(inSite, x), weight, c.rmsNormEps); });
    fire(outSite, h);
    return h;
  }

  /// self_attn up to o_proj's input: q/k/v projections (one GEMM unless a projection's input
  /// site is bound), q_norm/k_norm, RoPE, the KV store and attention -> [T, heads * D].
  torch::Tensor selfAttention(const torch::Tensor &h) {
    const bool split = bound(s.qIn) || bound(s.kIn) || bound(s.vIn);
    torch::Tensor qkv;
    if (!split)
      qkv = timed(Phase::QKVProj, [&] { return linear(h, l.qkv, l.qkvBias, l.qkvQuant); });
    // Qwen3 normalizes each of q and k right after its projection, Gemma both after v_proj.
    const bool normsLast = traits.headNormsAfterProjections;
    torch::Tensor q3, k3;
    torch::Tensor qs = project(h, qkv, s.qIn, 0, qWidth, /*lastReader=*/false);
    fireShard(s.qOut, qs, ShardAxis::Heads);
    if (!normsLast)
      q3 = headNorm(qs, s.qNormIn, s.qNormOut, l.qNorm, c.heads, ShardAxis::Heads);
    torch::Tensor ks = project(h, qkv, s.kIn, qWidth, kvWidth, /*lastReader=*/false);
    fireShard(s.kOut, ks, ShardAxis::KVHeads);
    if (!normsLast)
      k3 = headNorm(ks, s.kNormIn, s.kNormOut, l.kNorm, c.kvHeads, ShardAxis::KVHeads);
    torch::Tensor vs = project(h, qkv, s.vIn, qWidth + kvWidth, kvWidth, /*lastReader=*/true);
    fireShard(s.vOut, vs, ShardAxis::KVHeads);
    if (normsLast) {
      q3 = headNorm(qs, s.qNormIn, s.qNormOut, l.qNorm, c.heads, ShardAxis::Heads);
      k3 = headNorm(ks, s.kNormIn, s.kNormOut, l.kNorm, c.kvHeads, ShardAxis::KVHeads);
    }
    torch::Tensor v3 = vs.view({t, c.kvHeads, c.headDim});
    return bound(s.pattern) ? m.patternAttention(index, s.pattern, q3, k3, v3, step, *hooks)
                            : m.attention(index, q3, k3, v3, step);
  }

  /// One of q/k/v_proj: columns [begin, begin + count) of the fused output, or its own GEMM
  /// (input site fired on a copy of h, except for h's last reader, which may take h itself).
  torch::Tensor project(const torch::Tensor &h, const torch::Tensor &fused, int inSite,
                        int64_t begin, int64_t count, bool lastReader) {
    if (fused.defined())
      return fused.narrow(1, begin, count);
    torch::Tensor input = lastReader ? h : ownInput(inSite, h);
    if (lastReader)
      fire(inSite, input);
    return timed(Phase::QKVProj, [&] {
      return linear(input, weightRows(l.qkv, begin, count), weightRows(l.qkvBias, begin, count),
                    l.qkvQuant.defined() ? l.qkvQuant.narrowRows(begin, count) : QuantizedMatrix());
    });
  }

  /// q_proj's or k_proj's output [T, count * D] as [T, count, D], through q_norm/k_norm where
  /// the model has them (Qwen3, Gemma 3).
  torch::Tensor headNorm(const torch::Tensor &projected, int normIn, int normOut,
                         const torch::Tensor &normWeight, int64_t count, ShardAxis axis) {
    torch::Tensor h3 = projected.view({t, count, c.headDim});
    if (c.qkNorm) {
      fireShard(normIn, h3, axis);
      h3 = m.headNorm(h3, normWeight);
      fireShard(normOut, h3, axis);
    }
    return h3;
  }

  /// mlp up to down_proj's input: act_fn(gate_proj(h2)) * up_proj(h2), with gate and up in one
  /// GEMM and SiLU fused into the product unless a site between them is bound.
  torch::Tensor gatedActivation(const torch::Tensor &h2) {
    const bool split = bound(s.gateIn) || bound(s.upIn);
    torch::Tensor gateUp, gate;
    if (split) {
      gate = timed(Phase::GateUpProj, [&] {
        return linear(ownInput(s.gateIn, h2), weightRows(l.gateUp, 0, inter), {},
                      quantRows(l.gateUpQuant, 0));
      });
    } else {
      gateUp = timed(Phase::GateUpProj, [&] { return linear(h2, l.gateUp, {}, l.gateUpQuant); });
      gate = gateUp.narrow(1, 0, inter);
    }
    fireShard(s.gateOut, gate, ShardAxis::Intermediate);
    fireShard(s.actIn, gate, ShardAxis::Intermediate);
    if (!bound(s.actOut) && !bound(s.upOut)) {
      // act_fn's and up_proj's outputs are seen by nobody but the product: one pass. up_proj
      // runs before SiLU here, which only its input site (h2, unchanged by SiLU) could tell.
      torch::Tensor up = upProjection(h2, gateUp);
      return timed(Phase::Activation, [&] {
        return traits.activation == schema::Activation::Silu ? siluMul(gate, up)
                                                             : activation(gate) * up;
      });
    }
    torch::Tensor act = timed(Phase::Activation, [&] { return activation(gate); });
    fireShard(s.actOut, act, ShardAxis::Intermediate);
    torch::Tensor up = upProjection(h2, gateUp);
    fireShard(s.upOut, up, ShardAxis::Intermediate);
    return timed(Phase::Activation, [&] { return act * up; });
  }

  /// act_fn: SiLU or GELU (tanh approximation), as the family's.
  torch::Tensor activation(const torch::Tensor &gate) const {
    return traits.activation == schema::Activation::Silu ? at::silu(gate) : at::gelu(gate, "tanh");
  }

  /// up_proj(h2): the second half of the fused gate/up output, or its own GEMM (h2's last
  /// reader, so its input site fires on h2 itself).
  torch::Tensor upProjection(torch::Tensor h2, const torch::Tensor &gateUp) {
    if (gateUp.defined())
      return gateUp.narrow(1, inter, inter);
    fire(s.upIn, h2);
    return timed(Phase::GateUpProj, [&] {
      return linear(h2, weightRows(l.gateUp, inter, inter), {}, quantRows(l.gateUpQuant, inter));
    });
  }

  /// A norm of a block's output before the residual add (Gemma's post_attention_layernorm and
  /// post_feedforward_layernorm): its weight (undefined where the family has none) and sites.
  struct OutputNorm {
    const torch::Tensor &weight;
    int inSite, outSite;
  };

  /// o_proj / down_proj added to the residual, through the block's output norm if the family
  /// has one. When nobody sees the projection's output on its own (no output norm, its site
  /// and the module's output site unbound, no skipped rows) the add happens inside the GEMM.
  void addToResidual(const torch::Tensor &input, const torch::Tensor &weight,
                     const QuantizedMatrix &quant, Phase phase, int projOut, int moduleOut,
                     const SkippedRows &skipped, const OutputNorm &outNorm) {
    if (!outNorm.weight.defined() && !bound(projOut) && !bound(moduleOut) && skipped.empty()) {
      m.rowParallelAdd(x, input, weight, quant, phase);
      return;
    }
    torch::Tensor out = timed(phase, [&] { return linear(input, weight, {}, quant); });
    m.reducePartial(out);
    fire(projOut, out);
    restoreSkipped(out, skipped);
    fire(moduleOut, out);
    if (outNorm.weight.defined()) {
      fire(outNorm.inSite, out);
      out = timed(Phase::Norm, [&] { return m.rmsNorm(out, outNorm.weight, c.rmsNormEps); });
      fire(outNorm.outSite, out);
    }
    x.add_(out);
  }

  /// The rows of a skipped layer or self-attention leave no K/V in this layer for later
  /// steps, as in transformers, where the skipped module never updates its cache.
  void leaveNoKV(std::initializer_list<const SkippedRows *> skippedModules) {
    // On a device backend the step's slot mapping lives on the device; the map is the host's.
    const torch::Tensor slotMapping =
        step.meta.slotMapping.to(torch::kCPU, torch::kInt64).contiguous();
    const int64_t *mapping = slotMapping.data_ptr<int64_t>();
    std::vector<int64_t> slots;
    for (const SkippedRows *skipped : skippedModules)
      for (const auto &[group, value] : *skipped)
        for (int64_t r = group.tokenStart; r < group.tokenStart + group.tokenCount; ++r)
          if (mapping[r] >= 0)
            slots.push_back(mapping[r]);
    step.cache.markAbsent(index, slots);
  }

  //===--- Sites ----------------------------------------------------------===//

  bool bound(int site) const { return hooks && site >= 0 && hooks->bound(site); }

  /// Fires `site` on `value` (made contiguous so hooks and kernels see plain rows).
  void fire(int site, torch::Tensor &value) const {
    if (bound(site)) {
      value = value.contiguous();
      hooks->fire(site, value);
    }
  }

  /// A sharded site's value ([T, heads * D], [T, heads, D] or [T, I]: split along dim 1).
  void fireShard(int site, torch::Tensor &value, ShardAxis axis) const {
    if (bound(site))
      m.fireSharded(*hooks, site, value, 1, axis);
  }

  /// The value a module receives when it shares its input with later readers: a copy if the
  /// module's input site is bound, so a replacement reaches this module only.
  torch::Tensor ownInput(int site, const torch::Tensor &value) const {
    if (!bound(site))
      return value;
    torch::Tensor copy = value.clone();
    hooks->fire(site, copy);
    return copy;
  }

  /// `.skip()`: after the module's input site fired, the rows of a hook that skips the module
  /// hold the module's output. They are kept and become the module's output before its output
  /// site fires. The module still runs on them and its result there is dropped: row-wise
  /// modules cannot tell, and a skipped layer or attention leaves no K/V for those rows
  /// (leaveNoKV; docs/Runtime.md, "Skipping a module").
  SkippedRows keepSkipped(int inSite, const torch::Tensor &input) const {
    SkippedRows kept;
    if (bound(inSite))
      for (const TokenGroup &g : hooks->skippedRows(inSite))
        kept.emplace_back(g, input.narrow(0, g.tokenStart, g.tokenCount).clone());
    return kept;
  }

  static void restoreSkipped(torch::Tensor &output, const SkippedRows &kept) {
    for (const auto &[g, value] : kept)
      output.narrow(0, g.tokenStart, g.tokenCount).copy_(value);
  }

  /// Rows [begin, begin + inter) of gate/up's blocks (gate_proj's or up_proj's), if any.
  QuantizedMatrix quantRows(const QuantizedMatrix &quant, int64_t begin) const {
    return quant.defined() ? quant.narrowRows(begin, inter) : QuantizedMatrix();
  }

  const CausalLM &m;
  const LayerWeights &l;
  const CausalLM::LayerSites &s;
  const schema::ModelConfig &c; // this rank's sizes
  const schema::FamilyTraits &traits;
  const int64_t index;
  torch::Tensor &x;
  CausalLM::StepState &step;
  const HookDispatch *hooks;
  const int64_t t, qWidth, kvWidth, inter;
};

void CausalLM::decoderLayer(int64_t index, torch::Tensor &x, StepState &step,
                            const HookDispatch *hooks) const {
  DecoderLayer(*this, index, x, step, hooks).run();
}

} // namespace nnsc

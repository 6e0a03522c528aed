//===- CausalLM.h - Llama-family decoder over a flat batch ------*- C++ -*-===//
//
// One forward pass of Llama / Qwen2 / Qwen3 / Mistral / Gemma 3 over the flat [total_tokens,
// hidden] batch of a step, with paged attention and hook points. There is one layer path
// (DecoderLayer.cpp): with no site bound it is the fused path (one GEMM for q/k/v and one for
// gate/up, residual adds fused into the o_proj and down_proj GEMMs); a bound site splits only
// the fusion that would hide its value, and fires with transformers' semantics: a site's
// value is what the module's hook would see, and a replaced value flows only where the
// module's hook return value would flow. Module calls (applyModule) run the same kernels.
//
// Under tensor parallelism (a TensorParallelGroup and ModelWeights::shard) each rank runs its
// shard of every layer (TensorShard.h); o_proj's and down_proj's partial sums are all-reduced,
// the embedding all-reduced and the logits gathered. A bound site whose value is sharded
// fires on the whole value, gathered from the ranks, and each rank keeps its shard of what the
// hooks left (docs/Distributed.md); replicated sites fire as they are, with no communication.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_CAUSALLM_H
#define NNSC_RUNTIME_MODELS_CAUSALLM_H

#include "nnsc/Runtime/Attention/AttentionMetadata.h"
#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Hooks/HookDispatch.h"
#include "nnsc/Runtime/Layers/RotaryEmbedding.h"
#include "nnsc/Runtime/Models/DeviceKernels.h"
#include "nnsc/Runtime/Models/KVCache.h"
#include "nnsc/Runtime/Models/ModelWeights.h"
#include "nnsc/Runtime/Models/PhaseProfile.h"
#include "nnsc/Schema/Architecture.h"

namespace nnsc {

/// A decoder-only language model ready to run.
class CausalLM {
public:
  /// Runs on the device of `weights` with `kernels` of that device (a backend's: CpuKernels,
  /// CudaKernels); `group` holds the other ranks when the weights are one rank's shard (its
  /// size is the shard's). Throws InvalidInput when the two disagree.
  CausalLM(ModelWeights weights, const DeviceKernels &kernels,
           std::shared_ptr<TensorParallelGroup> group = nullptr);

  /// The whole model's config.
  const schema::ModelConfig &config() const { return w.config; }
  /// The config of what this rank computes: its heads, KV heads and intermediate channels
  /// (the whole model's on one rank). The KV cache is allocated for it.
  const schema::ModelConfig &shardConfig() const { return local; }
  /// The ranks this model is split over, or null.
  TensorParallelGroup *tensorParallel() const { return tp.get(); }
  const schema::Architecture &architecture() const { return arch; }
  torch::ScalarType dtype() const { return w.dtype; }
  /// Where the weights are.
  torch::Device device() const { return w.norm.device(); }

  /// Runs the step whose tokens are `tokens` ([total_tokens] int64) described by `meta`,
  /// writing their K/V into `cache`, and returns the logits [meta.sampleRows, vocab] in fp32.
  /// `hooks` may be null (nothing bound). Under tensor parallelism every rank calls it with
  /// the same step; ranks other than 0 get [meta.sampleRows, 0] unless a hook reads the
  /// logits (the `logits` or lm_head output site).
  torch::Tensor forward(const torch::Tensor &tokens, const AttentionMetadata &meta, KVCache &cache,
                        const HookDispatch *hooks) const;

  /// Applies module `module` (index in architecture().modules()) to `input` [rows, in] with
  /// the real weights and no hooks, as a trace's `norm(h)` or `layers[3].mlp(x)` does.
  /// Supports the RMSNorms, the linears, act_fn, mlp and lm_head; throws InvalidInput
  /// for another module or an input of the wrong width. Under tensor parallelism every rank
  /// calls it alike: it computes with the shards and communicates as the forward pass does, so
  /// input and output are whole.
  torch::Tensor applyModule(int module, const torch::Tensor &input) const;

  /// Packs the weights of the fused projections and the lm_head for oneDNN now (where oneDNN
  /// serves them), so that the first batched forward does not pay for it; a projection loaded
  /// without its widened copy from its blocks (the lm_head, then, on its first product over
  /// the row limit).
  void packWeights() const;

  /// Whether the weights came without widened copies of what their blocks serve
  /// (ProjectionForms::BlocksAndPacked).
  bool widenedProjectionsDropped() const { return widenedDropped; }

private:
  /// Site indices of one decoder layer.
  struct LayerSites {
    int first, last;
    int layerIn, layerOut, inNormIn, inNormOut, attnIn, attnOut;
    int qIn, qOut, qNormIn, qNormOut, kIn, kOut, kNormIn, kNormOut, vIn, vOut, oIn, oOut;
    int pattern;
    /// The MLP's input norm (Llama's post_attention_layernorm, Gemma's
    /// pre_feedforward_layernorm); Gemma's output norms (-1 elsewhere).
    int postNormIn, postNormOut, mlpIn, mlpOut;
    int attnOutNormIn, attnOutNormOut, mlpOutNormIn, mlpOutNormOut;
    int gateIn, gateOut, actIn, actOut, upIn, upOut, downIn, downOut;
  };
  /// Per-step values shared by the layers.
  struct StepState {
    const AttentionMetadata &meta;
    KVCache &cache;
    torch::Tensor cos, sin; // [tokens, head_dim]
    /// The sliding-window layers' RoPE (their own base), undefined without such layers.
    torch::Tensor localCos, localSin;
  };

  /// Which dimension of the model a sharded site's value is split along.
  enum class ShardAxis { Heads, KVHeads, Intermediate };

  /// One decoder layer on the step's rows, x updated in place: the schedule in
  /// DecoderLayer.cpp, the only layer code. `hooks` is null or binds none of the layer's
  /// sites on most layers; each site then costs one branch and the fused kernels run.
  void decoderLayer(int64_t index, torch::Tensor &x, StepState &step,
                    const HookDispatch *hooks) const;
  friend class DecoderLayer;
  /// q [T, heads, D], k/v [T, kv_heads, D] -> attention output [T, heads * D], after q/k
  /// RoPE and storing k/v in the layer's cache.
  torch::Tensor attention(int64_t index, torch::Tensor q, torch::Tensor k, torch::Tensor v,
                          StepState &step) const;
  /// The same with the softmax probabilities materialized and fired as site `pattern`
  /// (self_attn.pattern): the output is what the hooks left in them times V.
  torch::Tensor patternAttention(int64_t index, int pattern, torch::Tensor q, torch::Tensor k,
                                 torch::Tensor v, StepState &step, const HookDispatch &hooks) const;
  torch::Tensor headNorm(const torch::Tensor &x, const torch::Tensor &weight) const;
  /// x += in @ weight^T for a row-parallel projection (o_proj, down_proj): the GEMM adds into
  /// x on one rank; the ranks' partial sums are all-reduced first under tensor parallelism.
  void rowParallelAdd(torch::Tensor &x, const torch::Tensor &in, const torch::Tensor &weight,
                      const QuantizedMatrix &quant, Phase phase) const;
  /// All-reduces a row-parallel projection's partial sum (nothing on one rank).
  void reducePartial(torch::Tensor &partial) const;
  /// The whole of a value this rank holds the `axis` shard of, along `dim`.
  torch::Tensor gatherShards(const torch::Tensor &shard, int64_t dim, ShardAxis axis) const;
  /// This rank's `axis` shard along `dim` of the whole `value`.
  torch::Tensor shardOf(const torch::Tensor &value, int64_t dim, ShardAxis axis) const;
  /// Fires bound site `site` on the whole of `value` (this rank's `axis` shard along `dim`)
  /// and keeps this rank's shard of what the hooks left.
  void fireSharded(const HookDispatch &hooks, int site, torch::Tensor &value, int64_t dim,
                   ShardAxis axis) const;
  /// The embedding of `tokens`, from this rank's vocabulary rows and all-reduced; from the
  /// lm_head's blocks where the widened embedding was dropped.
  torch::Tensor embed(const torch::Tensor &tokens) const;
  /// The whole logits from this rank's vocabulary columns: on every rank if `everyRank`, else
  /// on rank 0 ([rows, 0] elsewhere).
  torch::Tensor gatherLogits(const torch::Tensor &logits, bool everyRank) const;
  /// The device's RMSNorm; inside the class it takes the place of nnsc::rmsNorm.
  torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight, double eps) const {
    return kernels->rmsNorm(x, weight, eps);
  }

  ModelWeights w;
  /// w.allQuantized(), once: whether decode-sized steps keep every product on the thread pool.
  bool allQuantized;
  /// w.widenedDropped(), once: whether products over the row limit run on oneDNN's threads.
  bool widenedDropped;
  /// Whether a layer with no site bound runs decode-sized steps on raw rows
  /// (DecoderLayer::runOnRows): CPU weights with every product on its blocks, one rank, no
  /// q_norm/k_norm, unless NNSC_ROW_LANE=off.
  bool rowLane = false;
  /// w.config with this rank's heads, KV heads and intermediate size.
  schema::ModelConfig local;
  const DeviceKernels *kernels;
  std::shared_ptr<TensorParallelGroup> tp;
  schema::Architecture arch;
  RotaryEmbedding rope;
  /// The local (sliding-window) layers' RoPE: ropeLocalTheta, no scaling (Gemma 3).
  RotaryEmbedding localRope;
  std::vector<LayerSites> layerSites;
  int embedIn, embedOut, normIn, normOut, lmHeadIn, lmHeadOut, logitsSite;
  /// Attention's query scale: head_dim^-1/2, or query_pre_attn_scalar^-1/2 (Gemma).
  double scale;
  /// sqrt(hidden) in the compute dtype where the family scales its embedding, else undefined.
  torch::Tensor embedScale;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_CAUSALLM_H

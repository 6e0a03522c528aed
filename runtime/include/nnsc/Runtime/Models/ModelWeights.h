//===- ModelWeights.h - decoder weights in the compute dtype ----*- C++ -*-===//
//
// The parameters of a Llama-family decoder as contiguous LibTorch tensors in the compute dtype
// (fp32 or bf16), loaded from a GGUF file (dequantized) or a Hugging Face model directory
// (config.json + safetensors). q/k/v and gate/up are stored fused so the common path runs one
// GEMM each; the unfused projections are row ranges of the fused weights. Projections loaded
// from Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / Q4_K / Q6_K GGUF tensors also keep the file's blocks
// (fused the same way: blocks run along the input dimension, so fusing rows concatenates block
// rows) for the quantized decode path (Layers/QuantizedLinear.h).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_MODELWEIGHTS_H
#define NNSC_RUNTIME_MODELS_MODELWEIGHTS_H

#include "nnsc/Runtime/Layers/QuantizedLinear.h"
#include "nnsc/Runtime/Models/TensorShard.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Schema/ModelConfig.h"

#include <torch/torch.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnsc {

/// A model that cannot be loaded: the message names the file, the tensor and what is wrong.
class ModelLoadError : public Error {
public:
  using Error::Error;
};

/// Weights of one decoder layer. Shapes use H = hidden, I = intermediate, D = head_dim,
/// Q = heads * D, KV = kv_heads * D, each this rank's share under tensor parallelism
/// (ModelWeights::shard).
struct LayerWeights {
  torch::Tensor inputNorm; // [H]
  torch::Tensor qkv;       // [Q + 2 KV, H]: q_proj, k_proj, v_proj rows
  torch::Tensor qkvBias;   // [Q + 2 KV], or undefined without attention bias
  torch::Tensor qNorm;     // [D], or undefined without q/k norm
  torch::Tensor kNorm;     // [D], or undefined without q/k norm
  torch::Tensor o;         // [H, Q]
  /// [H]: the MLP's input norm (Llama's post_attention_layernorm, Gemma's
  /// pre_feedforward_layernorm).
  torch::Tensor postNorm;
  /// [H], or undefined without FamilyTraits::sandwichNorms: Gemma's post_attention_layernorm
  /// (of the attention output) and post_feedforward_layernorm (of the MLP output).
  torch::Tensor attnOutNorm, mlpOutNorm;
  torch::Tensor gateUp; // [2 I, H]: gate_proj rows then up_proj rows
  torch::Tensor down;   // [H, I]
  /// The same projections' GGUF blocks, or undefined (not quantized in the file, formats
  /// the kernels do not read, mixed formats in a fused weight, or the path turned off).
  QuantizedMatrix qkvQuant, oQuant, gateUpQuant, downQuant;
};

/// Reports loading progress: tensors done out of total.
using LoadProgress = std::function<void(int64_t done, int64_t total)>;

/// One rank of `size` (tensor parallelism); the default is the whole model.
struct ShardRank {
  int rank = 0;
  int size = 1;
};

/// Which forms of a GGUF file's projections (and of a tied lm_head) a load keeps
/// (docs/Engine.md, "Memory").
enum class ProjectionForms {
  /// The widened tensors only, no blocks.
  Widened,
  /// The blocks too: decode products run on them, the rest on the widened tensors.
  WidenedAndBlocks,
  /// Where the quantized kernels, oneDNN (for the dtype) and a single rank allow it, no widened
  /// copy of what has blocks: a layer projection keeps its blocks only, and
  /// CausalLM::packWeights packs oneDNN's copy from them (else its first product over the row
  /// limit does); neither is an lm_head with blocks (its products over the limit run on a copy
  /// packed on first use), nor an embedding with blocks (the token lookup widens its rows
  /// from them per step). Elsewhere WidenedAndBlocks.
  BlocksAndPacked,
  /// As BlocksAndPacked, without the packed copies: products over the row limit multiply
  /// tiles dequantized from the blocks (QuantizedMatrix::tiled), so the blocks are the only
  /// resident form of those weights. Elsewhere WidenedAndBlocks.
  BlocksOnly,
};

/// What ModelWeights::load keeps by default: BlocksAndPacked, or Widened where
/// NNSC_QUANT_DECODE turns the quantized path off.
ProjectionForms defaultProjectionForms();

/// All parameters of a causal LM, or one tensor-parallel rank's shard of them.
struct ModelWeights {
  /// The whole model's config (what the schema and the sites describe).
  schema::ModelConfig config;
  /// What this rank holds (TensorShard::whole on one rank).
  TensorShard shard;
  torch::ScalarType dtype = torch::kFloat32;
  /// [vocab, H]: this rank's vocabulary rows; undefined where the embedding's blocks serve
  /// the token lookup (ProjectionForms::BlocksAndPacked).
  torch::Tensor embed;
  /// The embedding's GGUF blocks (the lm_head's when tied), or none: the token lookup widens
  /// its rows from them where `embed` is undefined.
  QuantizedMatrix embedQuant;
  std::vector<LayerWeights> layers; // a projection with blocks may have no widened tensor
  torch::Tensor norm;               // [H]
  /// [vocab, H]; the same tensor as `embed` when tied (both undefined where the blocks serve).
  torch::Tensor lmHead;
  QuantizedMatrix lmHeadQuant; // lm_head's GGUF blocks (the embedding's when tied), or none

  /// Loads MODEL (a .gguf file or a directory with config.json and safetensors) in `dtype`
  /// (kFloat32 or kBFloat16), the projections in `forms` (a directory's have no blocks: always
  /// Widened), only `rank`'s shard of each tensor. Throws ModelLoadError, and InvalidInput for
  /// a split the model does not allow (TensorShard::of).
  static ModelWeights load(const std::string &path, torch::ScalarType dtype,
                           const LoadProgress &progress = {},
                           ProjectionForms forms = defaultProjectionForms(), ShardRank rank = {});

  /// Whether a layer projection or the lm_head has no widened tensor (its blocks serve).
  bool widenedDropped() const;

  /// Bytes of the quantized blocks kept.
  int64_t quantizedBytes() const;

  /// Whether every projection and lm_head kept its quantized blocks.
  bool allQuantized() const;
};

/// Where a loader finds tensors by their Hugging Face names.
class WeightSource {
public:
  virtual ~WeightSource() = default;
  /// The tensor named `hfName` with exactly `shape`, converted to `dtype`. Returns an undefined
  /// tensor if it is absent and `optional`; throws ModelLoadError if it is absent otherwise,
  /// has another shape or an unsupported type.
  virtual torch::Tensor get(const std::string &hfName, const std::vector<int64_t> &shape,
                            torch::ScalarType dtype, bool optional = false) = 0;
  /// Number of tensors in the source (for progress).
  virtual int64_t size() const = 0;
  /// The tensor's blocks as stored, if it is a [rows, cols] tensor in a block format the
  /// quantized kernels read; undefined otherwise (and by default). `shape` as in get().
  virtual QuantizedMatrix getQuantized(const std::string &hfName,
                                       const std::vector<int64_t> &shape) {
    (void)hfName;
    (void)shape;
    return {};
  }
  /// Whether the norm weights of a family with FamilyTraits::normWeightOffset already hold
  /// 1 + weight (a GGUF file) rather than the weight (a Hugging Face checkpoint).
  virtual bool normsHoldOffset() const { return false; }
};

/// Fills ModelWeights from `source` per `config` (shared by the GGUF and safetensors loaders),
/// the projections in `forms`, keeping `rank`'s shard of each tensor as it is read (one whole
/// tensor at a time is in memory, never the whole model).
ModelWeights assembleWeights(const schema::ModelConfig &config, WeightSource &source,
                             torch::ScalarType dtype, const LoadProgress &progress,
                             ProjectionForms forms = ProjectionForms::Widened, ShardRank rank = {});

/// "[a, b]" for error messages.
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_MODELWEIGHTS_H

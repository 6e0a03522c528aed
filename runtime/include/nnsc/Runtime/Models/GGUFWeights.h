//===- GGUFWeights.h - weights from a GGUF file -----------------*- C++ -*-===//
//
// Maps Hugging Face parameter names to llama.cpp's (token_embd, blk.N.attn_q, ...),
// dequantizes F32/F16/BF16/Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q6_K, and undoes the q/k row permutation
// llama.cpp's converter applies to Llama models for its interleaved RoPE layout, exactly as
// transformers' GGUF loader does.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_GGUFWEIGHTS_H
#define NNSC_RUNTIME_MODELS_GGUFWEIGHTS_H

#include "nnsc/Runtime/Models/ModelWeights.h"
#include "nnsc/Support/GGUFFile.h"

#include <optional>

namespace nnsc {

/// The GGUF tensor name of a Hugging Face parameter name of a model of family `arch`, or
/// nullopt if it has none. The norms differ by family: Llama's post_attention_layernorm is
/// llama.cpp's ffn_norm, Gemma's is post_attention_norm (its pre_feedforward_layernorm is
/// ffn_norm).
std::optional<std::string> ggufTensorName(const std::string &hfName,
                                          schema::ArchKind arch = schema::ArchKind::Llama);

/// A WeightSource over an open GGUF file.
class GGUFWeightSource : public WeightSource {
public:
  GGUFWeightSource(const gguf::GGUFFile &file, const schema::ModelConfig &config);
  torch::Tensor get(const std::string &hfName, const std::vector<int64_t> &shape,
                    torch::ScalarType dtype, bool optional) override;
  int64_t size() const override { return int64_t(file.tensors().size()); }
  /// llama.cpp's converter stores Gemma's norm weights as 1 + weight.
  bool normsHoldOffset() const override { return true; }
  /// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and Q6_K tensors' blocks, copied out of the mapping, q/k
  /// rows unpermuted as in get().
  QuantizedMatrix getQuantized(const std::string &hfName,
                               const std::vector<int64_t> &shape) override;

private:
  /// The tensor of `hfName` with exactly `shape`; null if absent and `optional`. Throws
  /// ModelLoadError otherwise.
  const gguf::TensorInfo *find(const std::string &hfName, const std::vector<int64_t> &shape,
                               bool optional) const;
  /// Undoes llama.cpp's q/k row permutation on `t` (rows of any element type) if it applies.
  torch::Tensor unpermute(const gguf::TensorInfo &info, torch::Tensor t) const;

  const gguf::GGUFFile &file;
  schema::ModelConfig config;
  /// llama.cpp permutes q/k rows only for its "llama" architecture (which also covers
  /// Mistral GGUFs).
  bool permutedQK;
};

/// Dequantizes a GGUF tensor with torch shape `shape` (reversed ggml dims) to fp32. Throws
/// ModelLoadError naming the tensor and its type if the type is not supported.
torch::Tensor dequantizeGGUFTensor(const gguf::GGUFFile &file, const gguf::TensorInfo &info);

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_GGUFWEIGHTS_H

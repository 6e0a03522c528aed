//===- RotaryEmbedding.h - RoPE with the config's scaling -------*- C++ -*-===//
//
// transformers' rotary embedding in the half-split layout (rotate_half): inverse frequencies
// from rope_theta with default, linear or llama3 scaling, cos/sin computed in fp32 exactly as
// transformers does (positions times inverse frequencies, then cos and sin), cast to the
// compute dtype when applied.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_ROTARYEMBEDDING_H
#define NNSC_RUNTIME_LAYERS_ROTARYEMBEDDING_H

#include "nnsc/Schema/ModelConfig.h"

#include <torch/torch.h>

namespace nnsc {

/// The inverse frequencies [head_dim / 2] (fp32) of `config`'s RoPE.
torch::Tensor ropeInverseFrequencies(const schema::ModelConfig &config);

/// cos and sin for a step's positions, shared by every layer.
class RotaryEmbedding {
public:
  /// Keeps the inverse frequencies on `device`, where the positions of cosSin live.
  explicit RotaryEmbedding(const schema::ModelConfig &config, torch::Device device = torch::kCPU);

  /// cos and sin [tokens, head_dim] in `dtype` for `positions` [tokens] int64.
  std::pair<torch::Tensor, torch::Tensor> cosSin(const torch::Tensor &positions,
                                                 torch::ScalarType dtype) const;

  /// x [tokens, heads, head_dim] rotated by cos/sin [tokens, head_dim].
  static torch::Tensor apply(const torch::Tensor &x, const torch::Tensor &cos,
                             const torch::Tensor &sin);

private:
  torch::Tensor invFreq; // [head_dim / 2] fp32
};

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_ROTARYEMBEDDING_H

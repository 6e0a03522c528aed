//===- RotaryEmbedding.cpp - RoPE with the config's scaling -----*- C++ -*-===//

#include "nnsc/Runtime/Layers/RotaryEmbedding.h"

#include <cmath>

namespace nnsc {

using schema::RopeScaling;

torch::Tensor ropeInverseFrequencies(const schema::ModelConfig &c) {
  // Same op sequence as transformers' _compute_default_rope_parameters, so the fp32 values
  // agree bit for bit.
  const int64_t dim = c.headDim;
  torch::Tensor exponents = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / dim;
  torch::Tensor invFreq = 1.0 / torch::pow(c.ropeTheta, exponents);
  const RopeScaling &s = c.ropeScaling;
  if (s.type == RopeScaling::Type::Linear) {
    invFreq = invFreq / s.factor;
  } else if (s.type == RopeScaling::Type::Llama3) {
    const double old = double(s.originalMaxPositions);
    const double lowWavelen = old / s.lowFreqFactor;
    const double highWavelen = old / s.highFreqFactor;
    torch::Tensor wavelen = 2 * M_PI / invFreq;
    torch::Tensor scaled = torch::where(wavelen > lowWavelen, invFreq / s.factor, invFreq);
    torch::Tensor smooth = (old / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
    torch::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    torch::Tensor medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
    invFreq = torch::where(medium, smoothed, scaled);
  }
  return invFreq.contiguous();
}

RotaryEmbedding::RotaryEmbedding(const schema::ModelConfig &config, torch::Device device)
    : invFreq(ropeInverseFrequencies(config).to(device)) {}

std::pair<torch::Tensor, torch::Tensor> RotaryEmbedding::cosSin(const torch::Tensor &positions,
                                                                torch::ScalarType dtype) const {
  torch::Tensor freqs = positions.to(torch::kFloat32).unsqueeze(1) * invFreq.unsqueeze(0);
  torch::Tensor emb = torch::cat({freqs, freqs}, 1); // [tokens, head_dim]
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

torch::Tensor RotaryEmbedding::apply(const torch::Tensor &x, const torch::Tensor &cos,
                                     const torch::Tensor &sin) {
  const int64_t half = x.size(-1) / 2;
  torch::Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  torch::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  // x * cos + rotate_half(x) * sin, with rotate_half(x) = cat(-x2, x1).
  torch::Tensor rotated = torch::cat({-x2, x1}, -1);
  return x * c + rotated * s;
}

} // namespace nnsc

//===- Sampler.h - Token sampling from logits -------------------*- C++ -*-===//
//
// Turns one row of logits per sampling sequence into a token id: greedy at temperature 0,
// otherwise temperature, then top-k, then top-p, then a draw by inverse CDF. A seeded
// request's draw is a counter-based function of (seed, step), so its tokens do not depend on
// which other requests share the batch, their order, or how many steps ran before.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_SAMPLER_H
#define NNSC_RUNTIME_ENGINE_SAMPLER_H

#include "nnsc/Runtime/Engine/SamplingParams.h"
#include "nnsc/Runtime/Engine/Sequence.h"

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace nnsc {

/// One row to sample: its request's parameters and the step, i.e. how many tokens the
/// request generated before this one.
struct SamplingRow {
  const SamplingParams *params;
  int64_t step;
};

/// A sampled token's log-probability and the most likely tokens' at its step.
struct TokenLogprobs {
  float logprob = 0;
  /// Most likely first.
  std::vector<std::pair<int32_t, float>> top;
};

/// log_softmax of `row` (`vocab` logits) at `token`, and its `k` largest entries (ties to the
/// lower id).
TokenLogprobs tokenLogprobs(const float *row, int64_t vocab, int32_t token, int32_t k);

/// Samples token ids from logits on the CPU.
class Sampler {
public:
  /// `seed` drives the draws of requests without their own seed.
  explicit Sampler(uint64_t seed = std::random_device{}());

  /// logits: [rows.size(), vocab] float32 or bfloat16 (any device; copied to the CPU).
  /// Throws c10::Error for a bad logits shape or dtype and InvalidInput for
  /// impossible sampling params.
  std::vector<int32_t> sample(const torch::Tensor &logits, std::span<const SamplingRow> rows);
  /// Same, with the params and step of each sequence (e.g. batch.samplingSeqs()).
  std::vector<int32_t> sample(const torch::Tensor &logits, std::span<Sequence *const> seqs);

  /// The uniform number in [0, 1) a seeded request draws at `step`.
  static double seededUniform(uint64_t seed, int64_t step);

private:
  std::mt19937_64 generator;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_SAMPLER_H

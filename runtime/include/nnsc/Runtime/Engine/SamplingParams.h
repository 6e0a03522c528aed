//===- SamplingParams.h - Per-request sampling parameters -------*- C++ -*-===//
//
// What a request asks of the sampler and when its generation stops. Plain data with no torch
// dependency, so the scheduler can read the stop conditions.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_SAMPLINGPARAMS_H
#define NNSC_RUNTIME_ENGINE_SAMPLINGPARAMS_H

#include <cstdint>
#include <optional>
#include <vector>

namespace nnsc {

/// Sampling and stopping parameters of one request (vLLM's meaning for every field).
///
/// The member initializers are the defaults of every front door: nns-run's flags, nns-serve's
/// request fields and `nnsc.LLM.generate` / `nnsc.Client.generate` (which read them from the
/// extension). Greedy, because an experiment expects the same tokens on every run; vLLM and
/// OpenAI default to temperature 1.0 (docs/Server.md, "Sampling defaults").
struct SamplingParams {
  /// Softmax temperature; 0 selects greedy decoding (argmax, ties to the lowest id).
  float temperature = 0.0f;
  /// Keep only the K most likely tokens; 0 keeps all.
  int64_t topK = 0;
  /// Keep the smallest set of most likely tokens whose probability reaches P; 1 keeps all.
  float topP = 1.0f;
  /// With a seed, the request's draws depend only on the seed and the step, never on the other
  /// requests in the batch; without one, the sampler's own generator is used.
  std::optional<uint64_t> seed;
  /// Generation stops after this many completion tokens. 0 asks for the prompt pass alone:
  /// it runs (its hooks fire, it samples), and its token is dropped.
  int64_t maxTokens = 16;
  /// Do not stop at the model's end-of-sequence token.
  bool ignoreEos = false;
  /// Generation also stops after any of these tokens (the stop token is kept in the output).
  std::vector<int32_t> stopTokenIds;
  /// Return the log-probability of each sampled token and of the `logprobs` most likely
  /// tokens at its step (from the logits the sampler got, before temperature, top-k and
  /// top-p); -1 returns none.
  int32_t logprobs = -1;
  /// Batch-invariant mode: the request's saves, logits and tokens are the same bits whatever
  /// other requests share its steps (a step with such a request computes every row in an order
  /// that depends on that row alone; docs/Engine.md, "Batch-invariant mode"). Sampled tokens
  /// (temperature > 0) are reproducible with a `seed`.
  bool batchInvariant = false;

  /// Throws InvalidInput naming the first impossible field, e.g.
  /// "sampling params: 'top_p' must be in (0, 1], got 1.5".
  void validate() const;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_SAMPLINGPARAMS_H

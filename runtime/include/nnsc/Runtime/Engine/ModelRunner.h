//===- ModelRunner.h - one scheduled step on the model ----------*- C++ -*-===//
//
// nano-vllm's ModelRunner: turns a ScheduledBatch into the flat token batch and its attention
// metadata (cu_seqlens, slot mapping, block tables, context lengths), runs it as a prefill or
// a decode step of its model backend (which owns the paged KV cache), fires the
// sequence-level logits and samples phases, and samples. It sees the model only through the
// ModelBackend interface, so every backend runs the same engine.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_MODELRUNNER_H
#define NNSC_RUNTIME_ENGINE_MODELRUNNER_H

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Engine/Sampler.h"
#include "nnsc/Runtime/Engine/Scheduler.h"
#include "nnsc/Runtime/Hooks/HookTable.h"

#include <functional>
#include <memory>
#include <optional>

namespace nnsc {

/// The hook table of a sequence, or null.
using HookLookup = std::function<const HookTable *(const Sequence &)>;

/// `config` limited to what `caps` supports: no prefix caching on a backend whose prefill
/// cannot attend to cached tokens, at most caps.maxNumSeqs sequences per step.
SchedulerConfig fitToBackend(SchedulerConfig config, const BackendCapabilities &caps);

/// Runs scheduled steps of one model backend.
class ModelRunner {
public:
  /// Has `backend` allocate a KV cache of `numBlocks` blocks of `blockSize` tokens.
  ModelRunner(std::shared_ptr<ModelBackend> backend, int64_t numBlocks, int64_t blockSize,
              uint64_t samplerSeed);

  /// Runs `batch` and returns the logits [batch.samplingSeqs(), vocab] (fp32, on the CPU)
  /// after the logits phase's hooks.
  torch::Tensor forward(const ScheduledBatch &batch, const HookLookup &hooks = {});
  /// forward, then samples one token per batch.samplingSeqs() and fires the samples phase.
  std::vector<int32_t> run(const ScheduledBatch &batch, const HookLookup &hooks = {});
  /// For each sampling sequence of the latest run(), the log-probabilities its sampling
  /// params asked for (of the token it continues with), or nothing.
  const std::vector<std::optional<TokenLogprobs>> &lastLogprobs() const { return logprobs; }

  ModelBackend &backend() { return *model; }
  const ModelBackend &backend() const { return *model; }

private:
  std::shared_ptr<ModelBackend> model;
  int64_t blockSize;
  Sampler sampler;
  /// Built per step only when a request of the step has a hook table.
  std::unique_ptr<HookDispatch> dispatch;
  std::vector<std::optional<TokenLogprobs>> logprobs;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_MODELRUNNER_H

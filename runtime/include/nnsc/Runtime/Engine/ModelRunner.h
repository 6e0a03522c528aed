//===- ModelRunner.h - one scheduled step on the model ----------*- C++ -*-===//
//
// nano-vllm's ModelRunner: turns a ScheduledBatch into the flat token batch and its attention
// metadata (cu_seqlens, slot mapping, block tables, context lengths), runs the model over the
// paged KV cache it owns, fires the sequence-level logits and samples phases, and samples.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_MODELRUNNER_H
#define NNSC_RUNTIME_ENGINE_MODELRUNNER_H

#include "nnsc/Runtime/Engine/Sampler.h"
#include "nnsc/Runtime/Engine/Scheduler.h"
#include "nnsc/Runtime/Hooks/HookTable.h"
#include "nnsc/Runtime/Models/CausalLM.h"
#include "nnsc/Runtime/Models/KVCache.h"

#include <functional>
#include <memory>

namespace nnsc {

/// The hook table of a sequence, or null.
using HookLookup = std::function<const HookTable *(const Sequence &)>;

/// Runs scheduled steps of one model.
class ModelRunner {
public:
  /// Allocates a KV cache of `numBlocks` blocks of `blockSize` tokens.
  ModelRunner(std::shared_ptr<const CausalLM> model, int64_t numBlocks, int64_t blockSize,
              uint64_t samplerSeed);

  /// Runs `batch` and returns the logits [batch.samplingSeqs(), vocab] (fp32) after the
  /// logits phase's hooks.
  torch::Tensor forward(const ScheduledBatch &batch, const HookLookup &hooks = {});
  /// forward, then samples one token per batch.samplingSeqs() and fires the samples phase.
  std::vector<int32_t> run(const ScheduledBatch &batch, const HookLookup &hooks = {});

  const CausalLM &model() const { return *lm; }
  KVCache &kvCache() { return cache; }

private:
  std::shared_ptr<const CausalLM> lm;
  KVCache cache;
  int64_t blockSize;
  Sampler sampler;
  /// Built per step only when a request of the step has a hook table.
  std::unique_ptr<HookDispatch> dispatch;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_MODELRUNNER_H

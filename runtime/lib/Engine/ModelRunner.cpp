//===- ModelRunner.cpp - one scheduled step on the model --------*- C++ -*-===//

#include "nnsc/Runtime/Engine/ModelRunner.h"

#include "nnsc/Runtime/Attention/AttentionMetadata.h"
#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Layers/ProductOrder.h"
#include "nnsc/Runtime/Models/PhaseProfile.h"

#include <algorithm>
#include <optional>

namespace nnsc {

SchedulerConfig fitToBackend(SchedulerConfig config, const BackendCapabilities &caps) {
  if (!caps.prefixCaching)
    config.enablePrefixCaching = false;
  if (caps.maxNumSeqs > 0)
    config.maxNumSeqs = std::min(config.maxNumSeqs, caps.maxNumSeqs);
  return config;
}

namespace {

/// Under tensor parallelism every rank schedules the same requests with the same
/// deterministic scheduler; rank 0's batch is the step. A rank whose own batch differs (which
/// would be a bug, or ranks given different inputs) stops with an error instead of computing
/// a wrong answer: rank 0 broadcasts a fingerprint of its batch and every rank compares.
void checkSameBatch(TensorParallelGroup &tp, const ScheduledBatch &batch) {
  uint64_t hash = 1469598103934665603ull; // FNV-1a over what the step computes
  auto mix = [&](int64_t v) {
    for (int b = 0; b < 8; ++b)
      hash = (hash ^ uint64_t((v >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  for (const Sequence *seq : batch.seqs) {
    mix(seq->id());
    mix(seq->numCachedTokens);
    mix(seq->numScheduledTokens);
    for (int64_t block : seq->blockTable)
      mix(block);
  }
  torch::Tensor mine = torch::tensor(
      {int64_t(batch.isPrefill), int64_t(batch.seqs.size()), batch.numTokens(), int64_t(hash)},
      torch::kInt64);
  torch::Tensor rank0 = mine.clone();
  tp.broadcast(rank0);
  if (!torch::equal(mine, rank0))
    throw DistributedError(
        "tensor parallel rank " + std::to_string(tp.rank()) +
        " scheduled another step than rank 0 (" + std::to_string(batch.seqs.size()) +
        " sequences, " + std::to_string(batch.numTokens()) + " tokens against " +
        std::to_string(rank0[1].item<int64_t>()) + " and " +
        std::to_string(rank0[2].item<int64_t>()) + "): every rank must be given the same requests");
}

} // namespace

ModelRunner::ModelRunner(std::shared_ptr<ModelBackend> backend, int64_t numBlocks,
                         int64_t blockSize, uint64_t samplerSeed)
    : model(std::move(backend)), blockSize(blockSize), sampler(samplerSeed) {
  TORCH_CHECK(model, "ModelRunner: no model backend");
  model->allocateKVCache(numBlocks, blockSize);
}

torch::Tensor ModelRunner::forward(const ScheduledBatch &batch, const HookLookup &hooks) {
  if (TensorParallelGroup *tp = model->tensorParallel())
    checkSameBatch(*tp, batch);
  PhaseProfile &profile = PhaseProfile::get();
  profile.setPrefill(batch.isPrefill);
  profile.countStep(batch.numTokens());
  std::optional<ScopedPhase> metadataPhase(std::in_place, Phase::Metadata);
  AttentionMetadata meta = AttentionMetadata::fromBatch(batch, blockSize);
  // The step's products, those of module calls in hooks included, in the order it asks for.
  ScopedProductOrder order(meta.batchInvariant ? ProductOrder::RowInvariant
                                               : ProductOrder::Fastest);
  torch::Tensor tokens = torch::empty({batch.numTokens()}, torch::kInt64);
  int64_t *ids = tokens.data_ptr<int64_t>();
  for (const Sequence *seq : batch.seqs) {
    std::span<const int32_t> all = seq->tokenIds();
    for (int64_t p = 0; p < seq->numScheduledTokens; ++p)
      *ids++ = all[size_t(seq->numCachedTokens + p)];
  }
  metadataPhase.reset();

  // Requests with hooks: their rows in the flat batch and among the sampled rows.
  dispatch.reset();
  if (hooks) {
    int64_t row = 0, sampledRow = 0;
    for (const Sequence *seq : batch.seqs) {
      TokenGroup rows{row, seq->numScheduledTokens, seq->numCompletionTokens(), seq->id(),
                      seq->numCachedTokens};
      std::optional<TokenGroup> sampled;
      if (seq->samplesThisStep())
        sampled = TokenGroup{sampledRow++, 1, seq->numCompletionTokens(), seq->id(),
                             seq->numTokens() - 1};
      if (const HookTable *table = hooks(*seq)) {
        if (!dispatch)
          dispatch = std::make_unique<HookDispatch>(table->numSites());
        dispatch->add(*table, rows, sampled);
      }
      row += seq->numScheduledTokens;
    }
  }

  torch::Tensor logits = batch.isPrefill ? model->prefillForward(tokens, meta, dispatch.get())
                                         : model->decodeForward(tokens, meta, dispatch.get());
  int logitsSite = model->architecture().findSite("logits");
  if (dispatch && dispatch->bound(logitsSite))
    dispatch->fireSampled(logitsSite, logits);
  return logits;
}

std::vector<int32_t> ModelRunner::run(const ScheduledBatch &batch, const HookLookup &hooks) {
  torch::Tensor logits = forward(batch, hooks);
  std::vector<Sequence *> sampling = batch.samplingSeqs();
  std::vector<int32_t> tokens;
  // Rank 0 samples (its logits are whole) and every rank continues with its tokens.
  TensorParallelGroup *tp = model->tensorParallel();
  if (!tp || tp->rank() == 0) {
    ScopedPhase phase(Phase::Sampler);
    tokens = sampler.sample(logits, sampling);
  }
  if (tp) {
    torch::Tensor shared = torch::zeros({int64_t(sampling.size())}, torch::kInt32);
    if (tp->rank() == 0)
      std::copy(tokens.begin(), tokens.end(), shared.data_ptr<int32_t>());
    tp->broadcast(shared);
    tokens.assign(shared.data_ptr<int32_t>(), shared.data_ptr<int32_t>() + shared.numel());
  }
  int samplesSite = model->architecture().findSite("samples");
  if (dispatch && dispatch->bound(samplesSite)) {
    torch::Tensor value =
        torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kInt64);
    dispatch->fireSampled(samplesSite, value);
    // A samples hook may replace the token a request continues with.
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = int32_t(value[int64_t(i)].item<int64_t>());
  }
  logprobs.assign(sampling.size(), std::nullopt);
  for (size_t i = 0; i < sampling.size() && logits.size(1) > 0; ++i)
    if (int32_t k = sampling[i]->samplingParams().logprobs; k >= 0) {
      torch::Tensor row = logits[int64_t(i)].to(torch::kCPU, torch::kFloat32).contiguous();
      logprobs[i] = tokenLogprobs(row.data_ptr<float>(), row.size(0), tokens[i], k);
    }
  return tokens;
}

} // namespace nnsc

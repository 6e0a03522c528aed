//===- LLMEngine.cpp - continuous batching over one model -------*- C++ -*-===//

#include "nnsc/Runtime/Engine/LLMEngine.h"

#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Support/Error.h"

#include <algorithm>

namespace nnsc {

namespace {
FinishReason endReason(HookVerdict verdict) {
  switch (verdict) {
  case HookVerdict::Continue:
    return FinishReason::None;
  case HookVerdict::FinishAfterStep:
    return FinishReason::Stop;
  case HookVerdict::EndNow:
    return FinishReason::Cut;
  }
  return FinishReason::None;
}
} // namespace

LLMEngine::LLMEngine(std::shared_ptr<ModelBackend> model, SchedulerConfig config,
                     uint64_t samplerSeed)
    : backend(model), scheduler(fitToBackend(config, model->capabilities())),
      runner(std::move(model), config.numBlocks, config.blockSize, samplerSeed) {}

LLMEngine::LLMEngine(std::shared_ptr<const CausalLM> model, SchedulerConfig config,
                     uint64_t samplerSeed)
    : LLMEngine(makeCpuBackend(std::move(model)), config, samplerSeed) {}

std::unique_ptr<Sequence> LLMEngine::makeSequence(int64_t id, std::vector<int32_t> prompt,
                                                  const SamplingParams &params,
                                                  const HookTable *hooks) const {
  const BackendCapabilities caps = backend->capabilities();
  if (params.batchInvariant && !caps.batchInvariant)
    throw InvalidInput("batch-invariant mode runs on the CPU backend only, not on " +
                       caps.device.str());
  const int64_t vocab = backend->config().vocab;
  for (int32_t token : prompt)
    if (token < 0 || token >= vocab)
      throw InvalidInput("prompt token id " + std::to_string(token) +
                         " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  auto seq =
      std::make_unique<Sequence>(id, std::move(prompt), params, hooks ? hooks->cacheSalt() : 0);
  seq->allowPrefixHits = !hooks || hooks->allowsPrefixHits();
  seq->prefillWhole = hooks && (!hooks->allowsPrefixHits() || hooks->cacheSalt() != 0);
  seq->cacheCompletion = !hooks || hooks->cachesCompletion();
  seq->restartOnPreemption = hooks && hooks->restartsOnPreemption();
  return seq;
}

int64_t LLMEngine::addRequest(std::vector<int32_t> prompt, const SamplingParams &params,
                              std::shared_ptr<HookTable> hooks) {
  std::unique_ptr<Sequence> seq = makeSequence(nextId, std::move(prompt), params, hooks.get());
  scheduler.add(seq.get());
  active[nextId] = Request{std::move(seq), std::move(hooks)};
  return nextId++;
}

std::vector<int64_t> LLMEngine::addGang(std::vector<std::vector<int32_t>> prompts,
                                        const std::vector<SamplingParams> &params,
                                        std::vector<std::shared_ptr<HookTable>> hooks) {
  if (hooks.size() != prompts.size())
    throw InvalidInput("a multi-invoke request needs one hook table per prompt");
  if (params.size() != prompts.size())
    throw InvalidInput("a multi-invoke request needs one set of sampling params per prompt");
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<Sequence *> gang;
  for (size_t i = 0; i < prompts.size(); ++i) {
    seqs.push_back(
        makeSequence(nextId + int64_t(i), std::move(prompts[i]), params[i], hooks[i].get()));
    gang.push_back(seqs.back().get());
  }
  scheduler.addGang(gang);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < seqs.size(); ++i) {
    ids.push_back(nextId);
    active[nextId++] = Request{std::move(seqs[i]), std::move(hooks[i])};
  }
  return ids;
}

void LLMEngine::finish(Request &request, bool firesResult) {
  Sequence &seq = *request.seq;
  std::span<const int32_t> done = seq.completionTokenIds();
  RequestResult result{seq.id(),
                       {seq.promptTokenIds().begin(), seq.promptTokenIds().end()},
                       {done.begin(), done.end()},
                       seq.finishReason};
  if (request.hooks && firesResult) {
    int site = backend->architecture().findSite("result");
    for (const std::shared_ptr<SiteHook> &hook : request.hooks->at(site)) {
      torch::Tensor value =
          torch::tensor(std::vector<int64_t>(done.begin(), done.end()), torch::kInt64);
      TokenGroup group{0, value.size(0), seq.numCompletionTokens(), seq.id(),
                       seq.numPromptTokens()};
      hook->run(site, value, {&group, 1});
    }
  }
  if (request.hooks)
    request.hooks->release(seq.id());
  finished.push_back(std::move(result));
}

bool LLMEngine::abortRequest(int64_t id) {
  auto it = active.find(id);
  if (it == active.end())
    return false;
  for (Sequence *seq : scheduler.abort(*it->second.seq)) {
    auto member = active.find(seq->id());
    finish(member->second, /*firesResult=*/false);
    active.erase(member);
  }
  return true;
}

std::vector<StepOutput> LLMEngine::step() {
  ScheduledBatch batch = scheduler.schedule();
  HookLookup lookup = [this](const Sequence &seq) -> const HookTable * {
    auto it = active.find(seq.id());
    return it == active.end() ? nullptr : it->second.hooks.get();
  };
  // Before the batch runs: a restarted sequence may be back in it, from its prompt.
  for (const Sequence *seq : batch.restarted)
    if (const HookTable *hooks = lookup(*seq))
      hooks->restart(seq->id());
  if (batch.empty())
    return {};
  computedTokens += batch.numTokens();
  std::vector<int32_t> tokens = runner.run(batch, lookup);
  for (Sequence *seq : batch.seqs)
    if (const HookTable *hooks = lookup(*seq))
      seq->endAfterStep = endReason(hooks->verdict(seq->id()));
  std::vector<Sequence *> sampling = batch.samplingSeqs();
  std::vector<int64_t> completions;
  for (const Sequence *seq : sampling)
    completions.push_back(seq->numCompletionTokens());
  std::vector<Sequence *> done = scheduler.postprocess(batch, tokens);

  std::vector<StepOutput> outputs;
  const std::vector<std::optional<TokenLogprobs>> &logprobs = runner.lastLogprobs();
  for (size_t i = 0; i < sampling.size(); ++i)
    if (sampling[i]->numCompletionTokens() > completions[i])
      outputs.push_back({sampling[i]->id(), tokens[i], sampling[i]->isFinished(), logprobs[i]});
  for (Sequence *seq : done) {
    auto it = active.find(seq->id());
    finish(it->second);
    active.erase(it);
  }
  return outputs;
}

std::vector<RequestResult> LLMEngine::takeFinished() {
  std::vector<RequestResult> out;
  out.swap(finished);
  return out;
}

std::vector<RequestResult> LLMEngine::runToCompletion() {
  while (!isFinished())
    step();
  std::vector<RequestResult> results = takeFinished();
  std::sort(results.begin(), results.end(),
            [](const RequestResult &a, const RequestResult &b) { return a.request < b.request; });
  return results;
}

} // namespace nnsc

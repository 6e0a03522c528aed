//===- LLMEngine.cpp - continuous batching over one model -------*- C++ -*-===//

#include "nnsc/Runtime/Engine/LLMEngine.h"

#include "nnsc/Runtime/Backend/CpuBackend.h"

#include <algorithm>

namespace nnsc {

LLMEngine::LLMEngine(std::shared_ptr<ModelBackend> model, SchedulerConfig config,
                     uint64_t samplerSeed)
    : backend(model), scheduler(fitToBackend(config, model->capabilities())),
      runner(std::move(model), config.numBlocks, config.blockSize, samplerSeed) {}

LLMEngine::LLMEngine(std::shared_ptr<const CausalLM> model, SchedulerConfig config,
                     uint64_t samplerSeed)
    : LLMEngine(std::make_shared<CpuBackend>(std::move(model)), config, samplerSeed) {}

int64_t LLMEngine::addRequest(std::vector<int32_t> prompt, const SamplingParams &params,
                              std::shared_ptr<HookTable> hooks) {
  const int64_t vocab = backend->config().vocab;
  for (int32_t id : prompt)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("prompt token id " + std::to_string(id) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab) +
                                  ")");
  const bool forward = hooks && hooks->bindsForward();
  auto seq = std::make_unique<Sequence>(nextId, std::move(prompt), params,
                                        forward ? hooks->cacheSalt() : 0);
  seq->allowPrefixHits = !forward;
  scheduler.add(seq.get());
  active[nextId] = Request{std::move(seq), std::move(hooks)};
  return nextId++;
}

void LLMEngine::finish(Request &request) {
  Sequence &seq = *request.seq;
  std::span<const int32_t> done = seq.completionTokenIds();
  RequestResult result{seq.id(),
                       {seq.promptTokenIds().begin(), seq.promptTokenIds().end()},
                       {done.begin(), done.end()},
                       seq.finishReason};
  if (request.hooks) {
    int site = backend->architecture().findSite("result");
    if (SiteHook *hook = request.hooks->at(site)) {
      torch::Tensor value = torch::tensor(
          std::vector<int64_t>(done.begin(), done.end()), torch::kInt64);
      TokenGroup group{0, value.size(0), seq.numCompletionTokens(), seq.id(),
                       seq.numPromptTokens()};
      hook->run(site, value, {&group, 1});
    }
  }
  finished.push_back(std::move(result));
}

std::vector<StepOutput> LLMEngine::step() {
  ScheduledBatch batch = scheduler.schedule();
  if (batch.empty())
    return {};
  computedTokens += batch.numTokens();
  HookLookup lookup = [this](const Sequence &seq) -> const HookTable * {
    auto it = active.find(seq.id());
    return it == active.end() ? nullptr : it->second.hooks.get();
  };
  std::vector<int32_t> tokens = runner.run(batch, lookup);
  std::vector<Sequence *> sampling = batch.samplingSeqs();
  std::vector<Sequence *> done = scheduler.postprocess(batch, tokens);

  std::vector<StepOutput> outputs;
  for (size_t i = 0; i < sampling.size(); ++i)
    outputs.push_back({sampling[i]->id(), tokens[i], sampling[i]->isFinished()});
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

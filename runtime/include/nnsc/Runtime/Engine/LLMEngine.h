//===- LLMEngine.h - continuous batching over one model ---------*- C++ -*-===//
//
// nano-vllm's LLMEngine: requests go to the Scheduler; step() is schedule -> run ->
// postprocess. Requests may carry a hook table, which sets their prefix-cache salt and
// whether they may skip cached prompt positions, and whose hooks may end them after a step
// (finish(), stop(), a failed intervention); their result phase fires when they finish. The
// prompts of a multi-invoke request run as a gang (addGang).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_LLMENGINE_H
#define NNSC_RUNTIME_ENGINE_LLMENGINE_H

#include "nnsc/Runtime/Engine/ModelRunner.h"
#include "nnsc/Runtime/Engine/Scheduler.h"
#include "nnsc/Runtime/Models/CausalLM.h"

#include <map>
#include <memory>
#include <optional>

namespace nnsc {

/// What one step produced for one request.
struct StepOutput {
  int64_t request;
  int32_t token;
  bool finished;
  /// When the request's sampling params ask for them (SamplingParams::logprobs).
  std::optional<TokenLogprobs> logprobs;
};

/// A finished request.
struct RequestResult {
  int64_t request;
  std::vector<int32_t> promptTokens;
  std::vector<int32_t> completionTokens;
  FinishReason finishReason;
};

/// The engine: scheduler + model runner.
class LLMEngine {
public:
  /// Runs `backend`, with `config` fitted to its capabilities (fitToBackend). Throws
  /// InvalidInput for an impossible scheduler config.
  LLMEngine(std::shared_ptr<ModelBackend> backend, SchedulerConfig config,
            uint64_t samplerSeed = 0);
  /// Runs `model` on the CPU backend.
  LLMEngine(std::shared_ptr<const CausalLM> model, SchedulerConfig config,
            uint64_t samplerSeed = 0);

  /// Queues a request and returns its id. Throws InvalidInput for impossible
  /// sampling params or a prompt longer than the context.
  int64_t addRequest(std::vector<int32_t> prompt, const SamplingParams &params,
                     std::shared_ptr<HookTable> hooks = nullptr);
  /// Queues the prompts of one multi-invoke request, in invoke order, with one set of
  /// sampling params (a prompt's own max_tokens: 0 runs its prompt pass alone) and one hook
  /// table each; the scheduler keeps them in the same forward passes (Scheduler::addGang).
  /// Returns their ids. Throws InvalidInput as addRequest does, or when they could never be
  /// scheduled together.
  std::vector<int64_t> addGang(std::vector<std::vector<int32_t>> prompts,
                               const std::vector<SamplingParams> &params,
                               std::vector<std::shared_ptr<HookTable>> hooks);
  /// Ends request `id` (and the other invokes of its multi-invoke request) between steps:
  /// its blocks are freed, its hooks released, and its result, with FinishReason::Abort and
  /// the tokens it had, goes to takeFinished() without firing the result phase. False when
  /// no such request is active (it finished already, or was never added).
  bool abortRequest(int64_t id);
  /// One engine step: schedule -> run -> postprocess. Returns the tokens it produced (those
  /// the requests keep: not a step's token that stop() cut or max_tokens 0 dropped).
  std::vector<StepOutput> step();
  bool isFinished() const { return scheduler.isFinished(); }
  /// Results of the requests finished so far, removed from the engine.
  std::vector<RequestResult> takeFinished();
  /// Runs every queued request to completion; results in the order the requests were added.
  std::vector<RequestResult> runToCompletion();

  const Scheduler &getScheduler() const { return scheduler; }
  ModelRunner &getRunner() { return runner; }
  /// Total prompt and completion tokens computed by step() so far.
  int64_t numComputedTokens() const { return computedTokens; }

private:
  struct Request {
    std::unique_ptr<Sequence> seq;
    std::shared_ptr<HookTable> hooks;
  };
  /// A sequence for `prompt`, with the prefix-cache salt and policy of `hooks`.
  std::unique_ptr<Sequence> makeSequence(int64_t id, std::vector<int32_t> prompt,
                                         const SamplingParams &params,
                                         const HookTable *hooks) const;
  /// Records the result of a request that ended; `firesResult` runs its result phase.
  void finish(Request &request, bool firesResult = true);

  std::shared_ptr<ModelBackend> backend;
  Scheduler scheduler;
  ModelRunner runner;
  std::map<int64_t, Request> active;
  std::vector<RequestResult> finished;
  int64_t nextId = 0;
  int64_t computedTokens = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_LLMENGINE_H

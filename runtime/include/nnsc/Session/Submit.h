//===- Submit.h - one request into the engine, bound to its programs -*- C++ -*-===//
//
// The one way a front door hands a request to the engine (after vLLM's and nano-vllm's
// `LLMEngine.add_request` behind thin `LLM` and server doors): the prompts get their hook
// tables (the edit bound first, so it runs first at every site, then the request's trace),
// go in as one sequence or as a gang (the invokes of a multi-invoke trace), and each
// sequence is attached to the state it reports to.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SESSION_SUBMIT_H
#define NNSC_SESSION_SUBMIT_H

#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Session/Program.h"

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace nnsc::session {

/// A request as a door gives it to submit().
struct Submission {
  /// With a program, one per invoke of its trace; without, each prompt is a request of its
  /// own.
  std::vector<std::vector<int32_t>> prompts;
  /// One per prompt (a prompt's own max_tokens), or one for all.
  std::vector<SamplingParams> sampling;
  /// The trace the request runs; none for a plain request.
  std::optional<BoundTrace> program;
  /// Its state, shared by the invokes; made by submit() when null.
  std::shared_ptr<BundleRequest> state;
  /// The edit bound to every prompt before the program, if any.
  std::optional<BoundTrace> edit;
  /// The edit's state, one per prompt; made by submit() when empty.
  std::vector<std::shared_ptr<BundleRequest>> edits;
  /// The door's own hooks for prompt k, bound after the edit and the program; it makes the
  /// table when there is none yet and it binds something.
  std::function<void(std::shared_ptr<HookTable> &table, size_t k)> bindOwn;
};

/// Queues `s` on `engine` and returns the engine ids, one per prompt. Throws InvalidInput
/// naming what is wrong (the prompt count against the trace's invokes, a prompt too long,
/// impossible sampling params); nothing stays queued then.
std::vector<int64_t> submit(LLMEngine &engine, Submission &s);

} // namespace nnsc::session

#endif // NNSC_SESSION_SUBMIT_H

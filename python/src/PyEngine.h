//===- PyEngine.h - the continuous-batching engine for Python ---*- C++ -*-===//
//
// `_nnsc.Engine`: one LLMEngine over a loaded model. Python queues requests (plain, or bound to
// a trace of a loaded bundle with its params; a multi-invoke trace takes one prompt per invoke
// and runs them as a gang: session::submit, as nns-run and nns-serve) and then calls `run`
// repeatedly: each call runs
// engine steps with the GIL released for up to a time slice and returns the requests that
// finished, so Python can update a progress bar and notice Ctrl-C between slices.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PYTHON_PYENGINE_H
#define NNSC_PYTHON_PYENGINE_H

#include "PyModel.h"
#include "PyProgram.h"

#include "nnsc/Runtime/Bundle/BundleParams.h"
#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

namespace nnsc::python {

/// One queued request: its engine sequences (one per invoke) and, with a program, the state
/// its invokes share (params, frame, saves, error).
struct PyRequest {
  std::vector<int64_t> ids;
  std::shared_ptr<const Bundle> bundle;
  std::shared_ptr<BundleRequest> state;
};

class PyEngine {
public:
  PyEngine(PyModel &model, SchedulerConfig config, uint64_t seed);

  /// Queues `prompts` (one per invoke of `trace` of `bundle`, or one for a plain request when
  /// `bundle` is null) with `sampling` and the named params. Throws InvalidInput (a
  /// Python ValueError) naming what is wrong: a param, the prompt count, a prompt too long.
  std::shared_ptr<PyRequest> add(std::vector<std::vector<int32_t>> prompts,
                                 const SamplingParams &sampling, PyBundle *bundle,
                                 const std::string &trace, const std::vector<NamedParam> &params);

  /// Runs steps (GIL released) until every request finished or `seconds` passed; returns the
  /// results of the sequences that finished, and the number of tokens sampled.
  std::pair<std::vector<RequestResult>, int64_t> run(double seconds);

  bool abort(int64_t id) { return engine->abortRequest(id); }
  bool finished() const { return engine->isFinished(); }
  const SchedulerConfig &config() const { return engine->getScheduler().config(); }

private:
  std::unique_ptr<LLMEngine> engine;
};

void bindEngine(nanobind::module_ &m);

} // namespace nnsc::python

#endif // NNSC_PYTHON_PYENGINE_H

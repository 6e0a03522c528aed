//===- ProgramRunner.h - replays a program case through a bundle -*- C++ -*-===//
//
// Runs one ProgramCase the way the engine's BundleHook runs a trace: one BundleRequest per
// request (params, zeroed frame, saves by name, first error), one kernel call per site and
// forward pass with an nnsc_group per sequence, calls in the trace's site order, requests that
// failed left out of later calls and requests that stopped left out of the rest of that
// forward pass, module calls through CausalLM::applyModule. Every site tensor after its call,
// every save, error, stop() and finish() is compared with the case's reference.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_DIFFERENTIAL_PROGRAMRUNNER_H
#define NNSC_TEST_DIFFERENTIAL_PROGRAMRUNNER_H

#include "DifferentialCase.h"

#include "nnsc/Runtime/Bundle/Bundle.h"
#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Models/CausalLM.h"

#include <memory>
#include <string>
#include <vector>

namespace nnsc::difftest {

class ProgramRunner {
public:
  ProgramRunner(const Bundle &bundle, const CausalLM &model) : bundle(bundle), model(model) {}

  /// Replays `program`; returns one line per disagreement with the reference (empty: agree).
  std::vector<std::string> run(const ProgramCase &program);

private:
  struct Request {
    int64_t id;
    std::unique_ptr<BundleRequest> state;
    /// The step of the forward pass being run, for stop() and finish().
    int64_t step = 0;
    /// stop() was called in the forward pass at `stoppedStep`.
    std::optional<int64_t> stoppedStep;
  };

  static int32_t callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                            nnsc_tensor *output);
  static void reportError(void *ctx, void *request, const char *message, int64_t arg0,
                          int64_t arg1);
  static void save(void *ctx, void *request, int32_t index, int64_t step, const nnsc_tensor *value);
  static void stop(void *ctx, void *request);
  static void finish(void *ctx, void *request);
  /// Which requests skipped a module is the engine's business (BundleHook); the cases check
  /// the rows the kernel wrote.
  static void skip(void *, void *) {}

  /// The trace's params for `request` in its param order, defaults filling the gaps.
  std::vector<torch::Tensor> bindParams(const BundleTrace &trace, const CaseRequest &request);
  void runCall(const BundleTrace &trace, const CaseCall &call, const std::string &where);
  void compareResults(const ProgramCase &program);

  const Bundle &bundle;
  const CausalLM &model;
  std::vector<std::unique_ptr<Request>> requests;
  std::vector<std::string> problems;
  std::set<std::pair<int64_t, int64_t>> stops, finishes;
  int64_t failedModuleCalls = 0;
};

} // namespace nnsc::difftest

#endif // NNSC_TEST_DIFFERENTIAL_PROGRAMRUNNER_H

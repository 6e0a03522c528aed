//===- Program.h - a bundle loaded for a model, and a trace bound -*- C++ -*-===//
//
// What every front door (nns-run, nns-serve, nnsc.LLM) admits a program with: a bundle loaded
// and checked against the model backend that runs it, one BundleHook per trace (shared by every
// request that binds the trace), and a trace of it chosen by name with its params bound.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SESSION_PROGRAM_H
#define NNSC_SESSION_PROGRAM_H

#include "nnsc/Runtime/Bundle/BundleHook.h"
#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Models/CausalLM.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nnsc {
class ModelBackend;
} // namespace nnsc

namespace nnsc::session {

/// A bundle loaded for one model backend, with one hook per trace.
class Program {
public:
  /// Loads the bundle at `path` and checks it against `backend`'s model (loadBundle); null
  /// with `error` (naming the file) when it cannot be loaded, was built for another model or
  /// cannot run on the backend's device.
  static std::shared_ptr<const Program> load(const std::string &path, const ModelBackend &backend,
                                             std::string &error);

  const Bundle &bundle() const { return *loaded; }
  /// The bundle file's bytes, as loaded: what a tensor-parallel server sends the other ranks
  /// (ProgramRegistry::loadBytes loads them there).
  const std::string &fileBytes() const { return bytes; }
  const std::shared_ptr<const Bundle> &sharedBundle() const { return loaded; }
  /// The model's module tree, which the hook tables of the program's requests are built on.
  const schema::Architecture &architecture() const { return model->architecture(); }
  /// The trace `name`, or the only trace when `name` is empty; null with `error` naming the
  /// traces there are, and, when `name` is empty, ending with `chooseWith` (how the door
  /// names a trace: "choose one with --trace-name").
  const BundleTrace *findTrace(const std::string &name, const std::string &chooseWith,
                               std::string &error) const;
  /// The hook that runs `trace` (a trace of this program).
  const std::shared_ptr<BundleHook> &hook(const BundleTrace &trace) const;

private:
  Program() = default;

  std::shared_ptr<const Bundle> loaded;
  std::string bytes;
  std::shared_ptr<const CausalLM> model;
  std::map<const BundleTrace *, std::shared_ptr<BundleHook>> hooks;
};

/// A trace of a program with its params bound: what a request (or an edit) runs.
struct BoundTrace {
  std::shared_ptr<const Program> program;
  const BundleTrace *trace = nullptr;
  std::vector<torch::Tensor> params;

  /// Prompts per request: the trace's invokes, or 1.
  size_t invokes() const { return size_t(std::max(trace->numInvokes, 1)); }
  const std::shared_ptr<BundleHook> &hook() const { return program->hook(*trace); }
  /// A request's state for this trace (frame, params, saves, error): one per request, shared
  /// by its invokes.
  std::shared_ptr<BundleRequest> newState() const {
    return std::make_shared<BundleRequest>(*trace, params);
  }
};

/// "'clean', 'corrupt'": `names` quoted for messages.
std::string quotedList(const std::vector<std::string> &names);

/// Empty when `prompts` prompts make one request of `trace` (one prompt per invoke), else why
/// not, naming the trace, its invokes and the count given.
std::string checkInvokes(const BundleTrace &trace, size_t prompts);

/// Empty when the trace of `edit` can be an edit (bound to each request on its own, so it
/// has no invokes), else why not.
std::string checkEdit(const BoundTrace &edit);

} // namespace nnsc::session

#endif // NNSC_SESSION_PROGRAM_H

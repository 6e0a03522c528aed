//===- BundleHook.h - a bundle trace as a site hook -------------*- C++ -*-===//
//
// One BundleHook serves every request bound to one trace of a loaded bundle: when a site of
// the trace fires, it calls the trace's kernel for that site once, with one nnsc_group per
// request of the batch (rows, position, step, invoke, frame, params, request), and implements
// the nnsc_runtime callbacks (save, report_error, stop, finish, call_module through
// CausalLM::applyModule). A request whose kernel reported an error, or that stopped in this
// forward pass, is left out of later kernel calls.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_BUNDLEHOOK_H
#define NNSC_RUNTIME_BUNDLE_BUNDLEHOOK_H

#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Hooks/HookTable.h"
#include "nnsc/Runtime/Models/CausalLM.h"

#include <map>
#include <memory>

namespace nnsc {

class BundleHook : public SiteHook, public std::enable_shared_from_this<BundleHook> {
public:
  /// `trace` belongs to `bundle`, which was loaded for `model`.
  BundleHook(std::shared_ptr<const Bundle> bundle, const BundleTrace &trace,
             std::shared_ptr<const CausalLM> model);

  /// Binds every site of the trace in `table` to this hook.
  void bindSites(HookTable &table);
  /// Attaches the state of engine request `id` (the id LLMEngine::addRequest returned).
  void attach(int64_t id, std::shared_ptr<BundleRequest> request);

  void run(int site, torch::Tensor &value, std::span<const TokenGroup> groups) override;

  const BundleTrace &trace() const { return traceDesc; }

private:
  static int32_t callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                            nnsc_tensor *output);
  static void reportError(void *ctx, void *request, const char *message);
  static void save(void *ctx, void *request, int32_t index, int64_t step, const nnsc_tensor *value);
  static void stop(void *ctx, void *request);
  static void finish(void *ctx, void *request);

  std::shared_ptr<const Bundle> bundle;
  const BundleTrace &traceDesc;
  std::shared_ptr<const CausalLM> model;
  std::map<int64_t, std::shared_ptr<BundleRequest>> requests;
  nnsc_runtime runtime;
  /// The group being run for each request, so stop() knows which forward pass it ends.
  std::map<const BundleRequest *, std::pair<int64_t, int64_t>> current;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_BUNDLEHOOK_H

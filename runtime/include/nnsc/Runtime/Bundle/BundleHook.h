//===- BundleHook.h - a bundle trace as a site hook -------------*- C++ -*-===//
//
// One BundleHook serves every request bound to one trace of a loaded bundle: when a site of
// the trace fires, it calls the trace's kernel for that site once, with one nnsc_group per
// request of the batch (rows, position, step, invoke, frame, params, request), and implements
// the nnsc_runtime callbacks (save, report_error, stop, finish, call_module through
// CausalLM::applyModule). A request whose kernel reported an error, or that stopped, is left
// out of later kernel calls and ends with the step (verdict EndNow); finish() ends it after
// the step (FinishAfterStep). A preempted request restarts from its prompt with a fresh frame
// and no saves, so its results equal a run without preemption.
//
// Site values of a bf16 (or f16) model are converted at the hook boundary: the kernel gets an
// fp32 copy of the site value (the ABI's site dtype is f32) and, for sites it writes, the copy
// is written back rounded to the model's dtype. bf16 -> f32 -> bf16 is exact, so rows of
// other requests come back unchanged.
//
// A site value on a device (the CUDA backend's token-level sites) goes to the backend's
// DeviceKernelLauncher, which runs the kernel's device copy; values on the CPU (every site on
// the CPU backend, the sequence-level phases everywhere) go to the host kernel.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_BUNDLEHOOK_H
#define NNSC_RUNTIME_BUNDLE_BUNDLEHOOK_H

#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Bundle/DeviceKernelLauncher.h"
#include "nnsc/Runtime/Hooks/HookTable.h"
#include "nnsc/Runtime/Models/CausalLM.h"

#include <map>
#include <memory>

namespace nnsc {

class BundleHook : public SiteHook, public std::enable_shared_from_this<BundleHook> {
public:
  /// `trace` belongs to `bundle`, which was loaded for `model`. `launcher` (the backend's
  /// ModelBackend::bundleLauncher) runs the kernels of sites whose value is on a device; null
  /// where every value is on the CPU.
  BundleHook(std::shared_ptr<const Bundle> bundle, const BundleTrace &trace,
             std::shared_ptr<const CausalLM> model,
             std::shared_ptr<DeviceKernelLauncher> launcher = nullptr);

  /// Binds every site of the trace in `table` to this hook, and sets the table's prefix-cache
  /// policy from the trace's flags: a trace that reads prompt positions computes the whole
  /// prompt; one that writes them caches its K/V under a salt of the bundle's source hash,
  /// the trace name and `request`'s param bytes (equal bundle and params share blocks);
  /// any other trace shares the plain cache.
  void bindSites(HookTable &table, const BundleRequest &request);
  /// Attaches the state of engine sequence `id` (an id LLMEngine::addRequest returned) as
  /// invoke `invoke` of `request`; the sequences of one multi-invoke request share `request`.
  void attach(int64_t id, std::shared_ptr<BundleRequest> request, int32_t invoke = 0);

  void run(int site, torch::Tensor &value, std::span<const TokenGroup> groups) override;
  HookVerdict verdict(int64_t request) const override;
  bool skipped(int site, int64_t request) const override;
  /// A request's frame and saves hold its steps so far; after preemption it runs them again.
  bool restartsOnPreemption() const override { return true; }
  /// Resets the BundleRequest of sequence `request` (BundleRequest::restart); the sequences of
  /// a multi-invoke request restart together, and the reset is the same for each.
  void restart(int64_t request) override;
  /// Detaches sequence `request`; its BundleRequest lives on with whoever else holds it.
  void release(int64_t request) override;

  const BundleTrace &trace() const { return traceDesc; }

private:
  static int32_t callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                            nnsc_tensor *output);
  static void reportError(void *ctx, void *request, const char *message, int64_t arg0,
                          int64_t arg1);
  static void save(void *ctx, void *request, int32_t index, int64_t step, const nnsc_tensor *value);
  static void stop(void *ctx, void *request);
  static void finish(void *ctx, void *request);
  static void skip(void *ctx, void *request);

  std::shared_ptr<const Bundle> bundle;
  const BundleTrace &traceDesc;
  std::shared_ptr<const CausalLM> model;
  std::shared_ptr<DeviceKernelLauncher> launcher;
  /// One engine sequence: its request (shared by the invokes of a multi-invoke request) and
  /// invoke. Its address is the `nnsc_group.request` handle the callbacks get back.
  struct Attached {
    std::shared_ptr<BundleRequest> request;
    int32_t invoke;
    /// The site at whose latest firing the kernel skipped the module for this sequence.
    int skippedAt = -1;
  };
  static BundleRequest &requestOf(void *handle) {
    return *static_cast<Attached *>(handle)->request;
  }
  std::map<int64_t, Attached> requests;
  int currentSite = -1; // the site whose kernel runs (for skip())
  /// Why the latest call_module failed, until the kernel reports that failure.
  std::string moduleError;
  nnsc_runtime runtime;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_BUNDLEHOOK_H

//===- BundleRequest.h - one request's bundle state -------------*- C++ -*-===//
//
// What a request bound to a bundle trace carries through the engine: its params (as tensors
// and as the nnsc_tensor views the kernels get), its zeroed frame, the saves the kernels made
// and whether a kernel failed, stopped or finished it. The kernels see it as the opaque
// `nnsc_group.request` handed back to the runtime callbacks. A trace with invokes runs one
// engine sequence per invoke; they all share one BundleRequest (one frame, one set of saves,
// one error and finish() state), which is how values cross invokes; stop() ends one invoke.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_BUNDLEREQUEST_H
#define NNSC_RUNTIME_BUNDLE_BUNDLEREQUEST_H

#include "nnsc/Runtime/Bundle/Bundle.h"
#include "nnsc/Runtime/Bundle/DeviceKernelLauncher.h"
#include "nnsc/Runtime/Bundle/SaveStore.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnsc {

/// The bundle state of one request.
class BundleRequest {
public:
  /// `params` in the trace's param order, already checked (bindParams).
  BundleRequest(const BundleTrace &trace, std::vector<torch::Tensor> params);
  /// Frees the heap copies the frame still points to (BundleABI.md, "The frame").
  ~BundleRequest();
  BundleRequest(const BundleRequest &) = delete;
  BundleRequest &operator=(const BundleRequest &) = delete;

  const BundleTrace &trace() const { return traceDesc; }
  void *frame() { return frameBytes.numel() ? frameBytes.data_ptr() : nullptr; }
  const nnsc_tensor *params() const { return views.empty() ? nullptr : views.data(); }
  /// The bound params, in the trace's param order (contiguous).
  const std::vector<torch::Tensor> &paramTensors() const { return paramValues; }

  /// Records save `index` (at `step` for per-step saves) as a copy of `value`. Returns an
  /// error message when the value does not match the save's declared dtype and shape.
  std::optional<std::string> save(int32_t index, int64_t step, const nnsc_tensor &value);
  /// Caps the bytes of this request's saves: a save that would pass `bytes` fails the
  /// request with a message naming the limit (a server's per-request save budget). 0: none.
  void setSaveLimit(size_t bytes) { saveLimit = bytes; }
  /// Saved tensors by name ("h", "h.3" for a per-step save at step 3), viewing the request's
  /// save memory.
  std::map<std::string, torch::Tensor> saves() const;

  /// Fails the request; the first message is kept and no later kernel sees it.
  void fail(const std::string &message);
  const std::optional<std::string> &error() const { return failure; }

  /// stop() in invoke `invoke` (0 without invokes): no later kernel runs for that invoke's
  /// prompt, and it ends with the current step; the other invokes go on.
  void stop(int32_t invoke) { stoppedInvokes.at(size_t(invoke)) = true; }
  bool stopped(int32_t invoke) const { return stoppedInvokes.at(size_t(invoke)); }
  /// finish(): the request ends after the current step, keeping its token.
  void finish() { finishRequested = true; }
  bool finished() const { return finishRequested; }
  /// Whether kernels still run for invoke `invoke` of this request (the request did not fail,
  /// the invoke did not stop).
  bool live(int32_t invoke) const { return !failure && !stopped(invoke); }

  /// Back to the state of a request that has not run: zeroed frame (its heap copies freed),
  /// no saves, no error, stop or finish (the request restarts from its prompt after
  /// preemption). Params stay.
  void restart();
  /// A device kernel of `launcher` ran on the frame: its heap slots may hold device-heap
  /// pointers, which only the device can free; the request frees them through `launcher`.
  void noteDeviceFrame(std::shared_ptr<DeviceKernelLauncher> launcher) {
    deviceHeap = std::move(launcher);
  }
  /// Frees the frame's heap copies (on the device when a device kernel ran on it) and nulls
  /// the pointers: when the engine is done with the request (BundleHook::release), on
  /// restart() and in the destructor.
  void releaseFrameHeap();

private:
  const BundleTrace &traceDesc;
  std::vector<torch::Tensor> paramValues;
  std::vector<nnsc_tensor> views;
  torch::Tensor frameBytes;
  SaveStore saved;
  size_t saveLimit = 0;
  std::optional<std::string> failure;
  /// One flag per invoke (one without invokes).
  std::vector<bool> stoppedInvokes;
  bool finishRequested = false;
  /// Set once a device kernel ran on the frame: what frees its heap copies.
  std::shared_ptr<DeviceKernelLauncher> deviceHeap;
};

/// The torch dtype of an ABI dtype and back (nullopt for dtypes the ABI has no name for).
torch::ScalarType toTorchDtype(nnsc_dtype dtype);
std::optional<nnsc_dtype> toABIDtype(torch::ScalarType dtype);

/// The nnsc_tensor view of a CPU tensor of rank <= NNSC_MAX_RANK (strides in elements).
nnsc_tensor viewOf(const torch::Tensor &t);
/// The tensor an nnsc_tensor describes, without copying.
torch::Tensor tensorOf(const nnsc_tensor &t);

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_BUNDLEREQUEST_H

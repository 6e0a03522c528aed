//===- CudaBundleLauncher.h - bundle kernels on a CUDA device ---*- C++ -*-===//
//
// Runs the device copies of a --target=cuda bundle's kernels (docs/BundleABI.md, "CUDA
// execution"): the bundle's PTX is loaded with the CUDA driver API (cuModuleLoadDataEx, in
// the primary context LibTorch uses), and each site call
//   1. packs the call's arguments into one host staging buffer — the site's nnsc_tensor, the
//      nnsc_group array, each group's frame, each request's param table and param data, with
//      every pointer rewritten to its device address — and copies it to the device at once;
//   2. runs runCudaSiteCall (launch on the engine's current stream, replay the events through
//      BundleHook's callbacks, module calls, relaunch);
//   3. copies the frames back into the requests' host frames.
// When a request ends or restarts, the device-heap copies its frame still points to are freed
// by a kernel on the same stream (freeFrameHeap).
// Device buffers come from LibTorch's caching allocator and are kept, growing, between calls.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_CUDABUNDLELAUNCHER_H
#define NNSC_RUNTIME_BACKEND_CUDABUNDLELAUNCHER_H

#include "nnsc/Runtime/Bundle/Bundle.h"
#include "nnsc/Runtime/Bundle/DeviceKernelLauncher.h"

#include <torch/torch.h>

#include <map>
#include <memory>

namespace nnsc {

class CudaBundleLauncher final : public DeviceKernelLauncher {
public:
  /// Loads `bundle`'s PTX on `device`. Throws BackendError when the bundle has no device code
  /// or the driver refuses it (with the driver's log).
  CudaBundleLauncher(std::shared_ptr<const Bundle> bundle, torch::Device device);
  ~CudaBundleLauncher() override;

  std::string run(const BundleTrace &trace, const BundleSite &site, const nnsc_tensor &value,
                  std::span<const nnsc_group> groups, const nnsc_runtime &rt) override;
  /// Device free() on each pointer, by a kernel on the engine's stream (DeviceHeapCuda.h).
  std::string freeFrameHeap(std::span<void *const> pointers) override;

private:
  struct DeviceKernel {
    void *function; ///< CUfunction
    int64_t scratchBytes;
  };
  /// A device buffer of at least `bytes` in `slot`, kept for later calls.
  char *deviceBuffer(torch::Tensor &slot, int64_t bytes);

  std::shared_ptr<const Bundle> bundle;
  torch::Device device;
  void *context = nullptr; ///< CUcontext: the device's primary context
  void *module = nullptr;  ///< CUmodule
  /// By host kernel: nnsc_cuda_kernel.host.
  std::map<nnsc_site_kernel, DeviceKernel> kernels;
  torch::Tensor arguments, status, events, sink, scratch, moduleOutput;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CUDABUNDLELAUNCHER_H

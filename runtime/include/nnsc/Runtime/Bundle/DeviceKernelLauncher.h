//===- DeviceKernelLauncher.h - bundle kernels on a device ------*- C++ -*-===//
//
// A bundle's host kernels take host pointers. Where a backend keeps a site's value on a device
// (the CUDA backend's token-level sites), BundleHook hands the call to the backend's launcher
// instead, which runs the kernel's device copy (docs/BundleABI.md, "CUDA execution"). The
// launcher owns whatever the device needs (the loaded module, device buffers); the requests'
// frames and params stay in host memory, so host and device calls of one request share them;
// what device code allocated for a frame is freed through the launcher too.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_DEVICEKERNELLAUNCHER_H
#define NNSC_RUNTIME_BUNDLE_DEVICEKERNELLAUNCHER_H

#include "nnsc/Bundle/BundleABI.h"

#include <span>
#include <string>

namespace nnsc {

struct BundleTrace;
struct BundleSite;

class DeviceKernelLauncher {
public:
  virtual ~DeviceKernelLauncher() = default;
  /// Runs the device copy of `site`'s kernel of `trace` once over `groups` with `value`, whose
  /// data is in device memory; the groups' frames and params are host memory, and the frames
  /// come back updated. Callbacks go to `rt`, in the order the kernel made them. Returns "" or
  /// why the call failed for every request in it.
  virtual std::string run(const BundleTrace &trace, const BundleSite &site,
                          const nnsc_tensor &value, std::span<const nnsc_group> groups,
                          const nnsc_runtime &rt) = 0;
  /// Frees the device-heap copies a request's frame still points to when the request ends or
  /// restarts: `pointers` are read from its heap slots (docs/BundleABI.md, "The frame"); null
  /// ones are skipped. Queued on the device after every kernel run so far. Returns "" or why
  /// they could not be freed; never throws (a request's destructor calls it).
  virtual std::string freeFrameHeap(std::span<void *const> pointers) = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_DEVICEKERNELLAUNCHER_H

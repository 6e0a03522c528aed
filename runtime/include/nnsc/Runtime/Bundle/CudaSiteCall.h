//===- CudaSiteCall.h - the host's side of a CUDA site call -----*- C++ -*-===//
//
// docs/BundleABI.md, "CUDA execution": a device kernel cannot call the nnsc_runtime callbacks,
// so it records them as events; the host launches it, copies back the status, the events and
// the used part of the sink, replays the events through the ordinary callbacks in order, runs
// the module call a suspended kernel asks for, and launches it again until it no longer
// suspends. runCudaSiteCall is that loop, written once and independent of how device memory is
// reached: the CUDA driver (runtime/lib/Backend/CudaBundleLauncher.cpp) implements DevicePort
// with device copies and cuLaunchKernel, and the emulation test with host memory and the
// device code compiled for the host, so the same replay code is tested where no GPU exists.
//
// No torch here: this is part of NNSCBundle.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_CUDASITECALL_H
#define NNSC_RUNTIME_BUNDLE_CUDASITECALL_H

#include "nnsc/Bundle/BundleABI.h"

#include <cstdint>
#include <string>

namespace nnsc {

/// How the host reaches the device memory and the kernel of one site call.
class DevicePort {
public:
  virtual ~DevicePort() = default;
  /// Copies `bytes` (> 0; runCudaSiteCall makes no empty copies, whose pointers may be null)
  /// from device address `source` to host memory `dest`.
  virtual void toHost(void *dest, const void *source, int64_t bytes) = 0;
  /// Copies `bytes` (> 0) from host memory `source` to device address `dest`.
  virtual void toDevice(void *dest, const void *source, int64_t bytes) = 0;
  /// A device buffer of at least `bytes` for module outputs, valid until the next call (which
  /// may move it); the status points the kernel at it before each resume.
  virtual void *moduleOutput(int64_t bytes) = 0;
  /// Launches the kernel with the call's arguments (the status at CudaSiteBuffers::status)
  /// and waits for it.
  virtual void launch() = 0;
};

/// The device buffers of one site call (device addresses, as the kernel sees them).
struct CudaSiteBuffers {
  nnsc_cuda_status *status = nullptr;
  nnsc_cuda_event *events = nullptr;
  int64_t eventCapacity = 0;
  char *sink = nullptr;
  int64_t sinkBytes = 0;
  void *scratch = nullptr; ///< nnsc_cuda_kernel.scratch_bytes
};

/// Runs one site call of a device kernel to the end: launch, replay each launch's events
/// through `rt` (a SAVE's value and a module input read from the host copy of the sink), run a
/// requested module call through `rt.call_module` and copy its output to the device, relaunch.
/// `code` gives the error messages. Returns "" when the kernel ran to the end, else why the
/// call failed as a whole (events or sink overflowed, a malformed event, a kernel that never
/// stops suspending): the runtime then fails every request of the call, as it does for a host
/// kernel's non-zero return. `launches`, when given, counts the launches.
std::string runCudaSiteCall(DevicePort &port, const CudaSiteBuffers &buffers,
                            const nnsc_cuda_code &code, const nnsc_runtime &rt, int64_t maxLaunches,
                            int64_t *launches = nullptr);

/// Bytes of a contiguous tensor of `t`'s dtype and shape (-1 for an invalid dtype or shape).
int64_t contiguousBytes(const nnsc_tensor &t);

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_CUDASITECALL_H

//===- DeviceCallbacks.h - runtime callbacks as device calls ----*- C++ -*-===//
//
// A host kernel reaches the runtime through function pointers loaded from its nnsc_runtime
// argument (ABIBuilder). Its device copy gets an nnsc_cuda_status in that argument instead and
// calls the device functions of DeviceRuntime.h, which record the callbacks as events.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CUDA_DEVICECALLBACKS_H
#define NNSC_TARGET_CUDA_DEVICECALLBACKS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace nnsc::cuda {

/// The report_error messages of all device kernels, indexed by NNSC_CUDA_EVENT_ERROR events.
struct MessageTable {
  std::vector<std::string> messages;
  llvm::StringMap<int32_t> index;

  int32_t intern(llvm::StringRef message);
};

/// Replaces every runtime callback call in `kernel` (a gpu.func copied from a kernel of `host`)
/// with a call of the matching device function; a call_module becomes the recording call
/// followed by the read of its result, the point where the kernel suspends
/// (Suspension.h). A call that is not a runtime callback is an error naming the kernel.
mlir::LogicalResult rewriteCallbacks(mlir::gpu::GPUFuncOp kernel, mlir::ModuleOp host,
                                     MessageTable &messages);

} // namespace nnsc::cuda

#endif // NNSC_TARGET_CUDA_DEVICECALLBACKS_H

//===- DeviceRuntime.h - device functions behind the ABI callbacks -*- C++ -*-===//
//
// Device code cannot call the runtime's host callbacks. A device kernel calls these functions
// instead (defined in the gpu.module next to it): they record each callback as an
// nnsc_cuda_event in the kernel's nnsc_cuda_status for the host to replay after the launch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CUDA_DEVICERUNTIME_H
#define NNSC_TARGET_CUDA_DEVICERUNTIME_H

#include "mlir/IR/Block.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace nnsc::cuda {

/// Names of the device functions (func.func, all `(status, ...)`).
/// (request, message index, arg0, arg1)
constexpr const char *kReportErrorFn = "nnsc_cuda_report_error";
constexpr const char *kSaveFn = "nnsc_cuda_save";              ///< (request, save, step, tensor)
constexpr const char *kStopFn = "nnsc_cuda_stop";              ///< (request)
constexpr const char *kFinishFn = "nnsc_cuda_finish";          ///< (request)
constexpr const char *kSkipFn = "nnsc_cuda_skip";              ///< (request)
constexpr const char *kCallModuleFn = "nnsc_cuda_call_module"; ///< (module, input, output)
constexpr const char *kModuleResultFn = "nnsc_cuda_module_result"; ///< (output) -> i32

/// Parses the device functions into `body` (a gpu.module's body).
mlir::LogicalResult addDeviceRuntime(mlir::Block &body, mlir::MLIRContext *context);

/// After lowering to the LLVM dialect: the device functions become internal (so the PTX
/// exports only the kernels) and their unused C-interface wrappers are dropped.
void internalizeDeviceRuntime(mlir::Operation *gpuModule);

} // namespace nnsc::cuda

#endif // NNSC_TARGET_CUDA_DEVICERUNTIME_H

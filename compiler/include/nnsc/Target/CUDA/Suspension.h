//===- Suspension.h - device kernels that suspend at module calls -*- C++ -*-===//
//
// A module call (`norm(h)`) runs on the host, between launches of the device kernel. The
// kernel records the call and returns; the host runs the module and launches the kernel again,
// which continues right after the call. The state that crosses the call lives in the scratch
// memory of the kernel's nnsc_cuda_status: its stack buffers, and every SSA value live across
// the call (spilled at the call, reloaded when resumed).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CUDA_SUSPENSION_H
#define NNSC_TARGET_CUDA_SUSPENSION_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>

namespace nnsc::cuda {

/// What a suspending kernel needs from the runtime (nnsc_cuda_kernel).
struct SuspendInfo {
  int64_t scratchBytes = 0;
  int32_t numCalls = 0;
};

/// Rewrites `kernel` (an NVVM kernel in the LLVM dialect, its fourth argument the
/// nnsc_cuda_status) so that it returns after each call of the device function that records a
/// module call, and resumes there when launched with status.resume set to that call's 1-based
/// index. Kernels without module calls are left unchanged.
mlir::FailureOr<SuspendInfo> suspendAtModuleCalls(mlir::LLVM::LLVMFuncOp kernel);

} // namespace nnsc::cuda

#endif // NNSC_TARGET_CUDA_SUSPENSION_H

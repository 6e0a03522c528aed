//===- CUDATarget.h - kernels as PTX ----------------------------*- C++ -*-===//
//
// The device copy of a bundle's kernels: each kernel-level func.func becomes a `gpu.func`
// kernel of one `gpu.module`, its runtime callbacks recorded as events (DeviceCallbacks.h),
// lowered with nvvm-attach-target and convert-gpu-to-nvvm, made to suspend at module calls
// (Suspension.h) and serialized by gpu-module-to-binary (format=isa) to PTX, which the bundle
// embeds with its kernel table (docs/BundleABI.md, "CUDA execution").
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CUDA_CUDATARGET_H
#define NNSC_TARGET_CUDA_CUDATARGET_H

#include "nnsc/Target/Bundle/DeviceCode.h"
#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>

namespace nnsc::cuda {

struct CUDAOptions {
  std::string chip = "sm_90";
  /// CUDA toolkit root; when `bin/ptxas` exists there the PTX is also assembled to a cubin
  /// (gpu-module-to-binary format=bin) to check it.
  std::string toolkit = "/usr/local/cuda";
};

/// The device kernels of `module`'s manifest in `gpu.module @nnsc_kernels`, lowered to the
/// NVVM/LLVM dialects with their callbacks recorded and suspending at module calls; fills
/// `code` except its PTX. Null after emitting an error.
mlir::OwningOpRef<mlir::ModuleOp> lowerDeviceKernels(mlir::ModuleOp module,
                                                     nns::ManifestAttr manifest,
                                                     const CUDAOptions &options,
                                                     bundle::DeviceCode &code);

/// Compiles the manifest's kernels of `module` to PTX, with the kernel table and messages of
/// the bundle's nnsc_cuda_code. A call that is not a runtime callback is reported with
/// emitError, as device code cannot reach host functions. Returns nullopt after an error.
std::optional<bundle::DeviceCode> compileToPTX(mlir::ModuleOp module, nns::ManifestAttr manifest,
                                               const CUDAOptions &options);

} // namespace nnsc::cuda

#endif // NNSC_TARGET_CUDA_CUDATARGET_H

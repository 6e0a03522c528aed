//===- CUDATarget.h - kernels as PTX ----------------------------*- C++ -*-===//
//
// The device copy of a bundle's kernels: each kernel-level func.func becomes a `gpu.func`
// kernel of one `gpu.module`, lowered with nvvm-attach-target, convert-gpu-to-nvvm and
// gpu-module-to-binary (format=isa) to PTX, which the bundle embeds.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CUDA_CUDATARGET_H
#define NNSC_TARGET_CUDA_CUDATARGET_H

#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace nnsc::cuda {

struct CUDAOptions {
  std::string chip = "sm_90";
  /// CUDA toolkit root; when `bin/ptxas` exists there the PTX is also assembled to a cubin
  /// (gpu-module-to-binary format=bin) to check it.
  std::string toolkit = "/usr/local/cuda";
};

/// Compiles the manifest's kernels of `module` to PTX. Kernels must be self-contained: a call
/// (a runtime callback or another function) is reported with emitError, as device code
/// cannot reach host function pointers. Returns nullopt after emitting an error.
std::optional<std::string> compileToPTX(mlir::ModuleOp module, const bundle::Manifest &manifest,
                                        const CUDAOptions &options);

} // namespace nnsc::cuda

#endif // NNSC_TARGET_CUDA_CUDATARGET_H

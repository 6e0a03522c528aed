//===- Pipelines.h - pass pipelines of the back end -------------*- C++ -*-===//
//
// The lowering of kernel-level IR (docs/Compiler.md) to the LLVM dialect for the host, and of
// its device copy (a gpu.module) to NVVM, with MLIR's stock passes only.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PIPELINES_PIPELINES_H
#define NNSC_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace nnsc {

/// `nns-lower-to-llvm`: func/scf/cf/arith/math/memref/llvm on a builtin.module to the LLVM
/// dialect only, ready for translation to LLVM IR.
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm);

/// `nns-lower-gpu-to-nvvm`: the same lowering for the gpu.func kernels inside gpu.module ops
/// (to NVVM + LLVM dialects), to be followed by nvvm-attach-target and gpu-module-to-binary.
void buildLowerGPUToNVVMPipeline(mlir::OpPassManager &pm);

/// Registers both pipelines for tools built on MlirOptMain.
void registerPipelines();

} // namespace nnsc

#endif // NNSC_PIPELINES_PIPELINES_H

//===- KernelIR.h - dialects of kernel-level IR -----------------*- C++ -*-===//
//
// Kernel-level IR is an MLIR module in upstream dialects only (func, scf, cf, arith, math,
// memref, llvm) carrying the `nns.manifest` attribute; see docs/Compiler.md.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_KERNELIR_H
#define NNSC_TARGET_BUNDLE_KERNELIR_H

#include "mlir/IR/DialectRegistry.h"

namespace nnsc::bundle {

/// Registers the dialects of kernel-level IR and everything the back end needs to lower and
/// translate them for the host and NVPTX (gpu, nvvm, their LLVM IR translations and
/// ConvertToLLVM interfaces).
void registerKernelIRDialects(mlir::DialectRegistry &registry);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_KERNELIR_H

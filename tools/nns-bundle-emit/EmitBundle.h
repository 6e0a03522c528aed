//===- EmitBundle.h - nnsc on kernel-level IR -------------------*- C++ -*-===//
//
// `nnsc KERNELS.mlir -emit=llvm|bundle [-o OUT] [--target=cpu|cuda] [--cpu=NAME]`: the back
// end alone, on kernel-level IR (docs/Compiler.md). Its options live in EmitBundle.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_EMITBUNDLE_H
#define NNSC_TOOLS_EMITBUNDLE_H

#include "llvm/ADT/StringRef.h"

namespace nnsc {

enum class KernelIREmit { LLVM, Bundle };

/// Compiles the kernel-level IR in `inputFilename`; returns the process exit code. With
/// `verifyDiagnostics`, checks the emitted diagnostics against expected-* comments instead.
int emitFromKernelIR(llvm::StringRef inputFilename, KernelIREmit emit, bool verifyDiagnostics);

} // namespace nnsc

#endif // NNSC_TOOLS_EMITBUNDLE_H

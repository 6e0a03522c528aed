//===- EmitBundle.h - nnsc on kernel-level IR -------------------*- C++ -*-===//
//
// `nnsc KERNELS.mlir -emit=llvm-dialect|llvm|bundle [-o OUT] [--target=cpu|cuda] [--cpu=NAME]`: the
// back end alone, on kernel-level IR (docs/Compiler.md). Its options live in EmitBundle.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_EMITBUNDLE_H
#define NNSC_TOOLS_EMITBUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace nnsc {

enum class KernelIREmit {
  LLVMDialect, ///< the module after nns-lower-to-llvm (manifest kept as an attribute)
  LLVM,        ///< optimized LLVM IR of the bundle
  Bundle,      ///< the linked shared object
};

/// Compiles `module`, kernel-level IR in a context with the kernel-level IR dialects, as the
/// options of EmitBundle.cpp (-o, --target, ...) say: the nnsc driver's back end.
mlir::LogicalResult emitFromModule(mlir::ModuleOp module, KernelIREmit emit);

/// Compiles the kernel-level IR in `inputFilename`; returns the process exit code. With
/// `verifyDiagnostics`, checks the emitted diagnostics against expected-* comments instead;
/// with `splitInputFile`, handles each `// -----` chunk as its own input.
int emitFromKernelIR(llvm::StringRef inputFilename, KernelIREmit emit, bool verifyDiagnostics,
                     bool splitInputFile);

} // namespace nnsc

#endif // NNSC_TOOLS_EMITBUNDLE_H

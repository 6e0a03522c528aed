//===- KernelIRDriver.h - the back end's driver on kernel-level IR -*- C++ -*-===//
//
// `KERNELS.mlir -emit=llvm-dialect|llvm|bundle [-o OUT] [--target=cpu|cuda] [--cpu=NAME]`:
// the back end alone, on kernel-level IR (docs/Compiler.md), as both drivers run it: nnsc
// after its scheduling passes, nns-bundle-emit on a file. The back end's command-line options
// (-o, --target, --cpu, --opt-level, --cuda-chip, --cuda-toolkit) are registered by the tool
// that wants them (registerBackendCLOptions, as MLIR's registerPassManagerCLOptions) and read
// into a BackendOptions after parsing; nothing here reads a global.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_KERNELIRDRIVER_H
#define NNSC_TARGET_BUNDLE_KERNELIRDRIVER_H

#include "nnsc/Target/Bundle/BundleEmitter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace nnsc::bundle {

enum class KernelIREmit {
  LLVMDialect, ///< the module after nns-lower-to-llvm (manifest kept as an attribute)
  LLVM,        ///< optimized LLVM IR of the bundle
  Bundle,      ///< the linked shared object
};

/// Where the back end writes and what it generates code for.
struct BackendOptions {
  std::string outputFilename = "-";
  BundleOptions bundle;
};

/// Registers -o, --target, --cpu, --opt-level, --cuda-chip and --cuda-toolkit with LLVM's
/// command line (once; before cl::ParseCommandLineOptions).
void registerBackendCLOptions();
/// The registered options' values (after parsing); defaults when they were not registered.
BackendOptions backendOptionsFromCL();

/// Compiles `module`, kernel-level IR in a context with the kernel-level IR dialects, to
/// `emit` as `options` say: the nnsc driver's back end.
mlir::LogicalResult emitFromModule(mlir::ModuleOp module, KernelIREmit emit,
                                   const BackendOptions &options);

/// Compiles the kernel-level IR in `inputFilename`; returns the process exit code. With
/// `verifyDiagnostics`, checks the emitted diagnostics against expected-* comments instead;
/// with `splitInputFile`, handles each `// -----` chunk as its own input.
int emitFromKernelIR(llvm::StringRef inputFilename, KernelIREmit emit,
                     const BackendOptions &options, bool verifyDiagnostics, bool splitInputFile);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_KERNELIRDRIVER_H

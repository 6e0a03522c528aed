//===- nns-bundle-emit.cpp - kernel-level IR to a bundle --------*- C++ -*-===//
//
//   nns-bundle-emit KERNELS.mlir -emit=llvm-dialect|llvm|bundle [-o OUT] [--target=cpu|cuda]
//   [--cpu=NAME]
//
// The back end of nnsc on kernel-level IR (docs/Compiler.md); see KernelIRDriver.h.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Target/Bundle/KernelIRDriver.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<kernel-level .mlir>"),
                                          cl::init("-"), cl::value_desc("filename"));

static cl::opt<nnsc::bundle::KernelIREmit>
    emitAction("emit", cl::desc("What to produce"), cl::init(nnsc::bundle::KernelIREmit::LLVM),
               cl::values(clEnumValN(nnsc::bundle::KernelIREmit::LLVMDialect, "llvm-dialect",
                                     "the kernels after nns-lower-to-llvm"),
                          clEnumValN(nnsc::bundle::KernelIREmit::LLVM, "llvm",
                                     "optimized LLVM IR of the bundle"),
                          clEnumValN(nnsc::bundle::KernelIREmit::Bundle, "bundle",
                                     "the bundle (.nnsb), with -o")));

static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check that emitted diagnostics match expected-* lines in the input"),
    cl::init(false));

static cl::opt<bool>
    splitInputFile("split-input-file",
                   cl::desc("Compile each '// -----' chunk of the input separately"),
                   cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  nnsc::bundle::registerBackendCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "nnsc back end: kernel-level IR to bundles\n");
  return nnsc::bundle::emitFromKernelIR(inputFilename, emitAction,
                                        nnsc::bundle::backendOptionsFromCL(), verifyDiagnostics,
                                        splitInputFile);
}

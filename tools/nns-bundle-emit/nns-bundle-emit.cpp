//===- nns-bundle-emit.cpp - kernel-level IR to a bundle --------*- C++ -*-===//
//
//   nns-bundle-emit KERNELS.mlir -emit=llvm-dialect|llvm|bundle [-o OUT] [--target=cpu|cuda]
//   [--cpu=NAME]
//
// The back end of nnsc on kernel-level IR (docs/Compiler.md); see EmitBundle.h.
//
//===----------------------------------------------------------------------===//

#include "EmitBundle.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<kernel-level .mlir>"),
                                          cl::init("-"), cl::value_desc("filename"));

static cl::opt<nnsc::KernelIREmit> emitAction(
    "emit", cl::desc("What to produce"), cl::init(nnsc::KernelIREmit::LLVM),
    cl::values(clEnumValN(nnsc::KernelIREmit::LLVMDialect, "llvm-dialect",
                          "the kernels after nns-lower-to-llvm"),
               clEnumValN(nnsc::KernelIREmit::LLVM, "llvm", "optimized LLVM IR of the bundle"),
               clEnumValN(nnsc::KernelIREmit::Bundle, "bundle", "the bundle (.nnsb), with -o")));

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
  cl::ParseCommandLineOptions(argc, argv, "nnsc back end: kernel-level IR to bundles\n");
  return nnsc::emitFromKernelIR(inputFilename, emitAction, verifyDiagnostics, splitInputFile);
}

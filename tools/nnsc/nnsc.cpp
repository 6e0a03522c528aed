//===- nnsc.cpp - the nns trace compiler driver -----------------*- C++ -*-===//

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Frontend/Parser.h"

namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .nns file>"),
                                          cl::init("-"), cl::value_desc("filename"));

enum class Action { Syntax };
static cl::opt<Action> emitAction(
    "emit", cl::desc("What to produce"), cl::init(Action::Syntax),
    cl::values(clEnumValN(Action::Syntax, "syntax", "check the syntax only (default)")));

static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check that emitted diagnostics match expected-* lines in the input"),
    cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "nns trace compiler\n");

  auto fileOrErr = llvm::MemoryBuffer::getFileOrSTDIN(inputFilename);
  if (std::error_code ec = fileOrErr.getError()) {
    llvm::errs() << "nnsc: cannot open '" << inputFilename << "': " << ec.message() << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*fileOrErr), llvm::SMLoc());

  mlir::MLIRContext context;
  context.getOrLoadDialect<nnsc::nns::NNSDialect>();

  if (verifyDiagnostics) {
    mlir::SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
    (void)nnsc::parseSyntax(sourceMgr, context);
    return mlir::failed(handler.verify()) ? 1 : 0;
  }
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  if (mlir::failed(nnsc::parseSyntax(sourceMgr, context)))
    return 1;
  switch (emitAction) {
  case Action::Syntax:
    llvm::outs() << inputFilename << ": syntax ok\n";
    break;
  }
  return 0;
}

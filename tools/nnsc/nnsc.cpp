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
#include "nnsc/Schema/Architecture.h"

#include <cstdlib>

namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .nns file>"),
                                          cl::init("-"), cl::value_desc("filename"));

enum class Action { Syntax };
static cl::opt<Action> emitAction(
    "emit", cl::desc("What to produce"), cl::init(Action::Syntax),
    cl::values(clEnumValN(Action::Syntax, "syntax", "check the syntax only (default)")));

static cl::opt<std::string> modelPath(
    "model", cl::desc("Model to compile against: a .gguf file or a Hugging Face model "
                      "directory (default: the bundled SmolLM2, or $NNSC_MODEL)"),
    cl::value_desc("path"), cl::init(""));

static cl::opt<bool> printSites(
    "print-sites", cl::desc("Print the model's sites in firing order with their shapes and exit"),
    cl::init(false));

static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check that emitted diagnostics match expected-* lines in the input"),
    cl::init(false));

static std::string resolveModelPath() {
  if (!modelPath.empty())
    return modelPath;
  if (const char *env = std::getenv("NNSC_MODEL"))
    return env;
  return NNSC_DEFAULT_MODEL;
}

/// One line per site: order, path, shape (T for the token dimension), element type.
static void printSiteTable(const nnsc::schema::Architecture &arch) {
  for (const nnsc::schema::Site &site : arch.sites()) {
    llvm::outs() << site.order << " " << site.path << " [";
    for (size_t i = 0; i < site.shape.size(); ++i) {
      if (i)
        llvm::outs() << ", ";
      if (site.shape[i] == nnsc::schema::kTokens)
        llvm::outs() << "T";
      else
        llvm::outs() << site.shape[i];
    }
    llvm::outs() << "] "
                 << (site.elementType == nnsc::schema::ElementType::F32 ? "f32" : "i64")
                 << (site.writable ? "" : " read-only") << "\n";
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "nns trace compiler\n");

  if (printSites) {
    std::string error;
    std::optional<nnsc::schema::ModelConfig> config =
        nnsc::schema::ModelConfig::fromPath(resolveModelPath(), error);
    if (!config) {
      llvm::errs() << "nnsc: error: " << error << "\n";
      return 1;
    }
    printSiteTable(nnsc::schema::Architecture(*config));
    return 0;
  }

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

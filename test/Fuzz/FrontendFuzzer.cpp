//===- FrontendFuzzer.cpp - fuzz the trace language front end -------------===//
//
// A trace program from anywhere (nnsc's input, nns-serve's `nns.program`): the ANTLR parser,
// Sema (names, shapes, order of access, unrolling) against the bundled model's architecture,
// MLIRGen, and the MLIR verifier on what MLIRGen built. Diagnostics are discarded; a crash,
// sanitizer report or an accepted program whose IR does not verify is a finding.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Frontend/MLIRGen.h"
#include "nnsc/Frontend/Parser.h"
#include "nnsc/Frontend/Sema.h"
#include "nnsc/Schema/Architecture.h"
#include "nnsc/Schema/ModelConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>
#include <cstdlib>

namespace {

const nnsc::schema::Architecture &modelArchitecture() {
  static const nnsc::schema::Architecture architecture = [] {
    const char *path = std::getenv("NNSC_FUZZ_MODEL");
    std::string error;
    std::optional<nnsc::schema::ModelConfig> config =
        nnsc::schema::ModelConfig::fromPath(path ? path : NNSC_FUZZ_MODEL, error);
    if (!config) {
      std::fprintf(stderr, "fuzz-frontend: cannot read the model config: %s\n", error.c_str());
      std::abort();
    }
    return nnsc::schema::Architecture(*config);
  }();
  return architecture;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const nnsc::schema::Architecture &arch = modelArchitecture();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.nns"),
      llvm::SMLoc());
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.getOrLoadDialect<nnsc::nns::NNSDialect>();
  // Swallow diagnostics (the default handler would print every one of them).
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });

  std::optional<nnsc::ast::Program> program = nnsc::parseProgram(sourceMgr, context);
  if (!program)
    return 0;
  std::vector<nnsc::SaveInfo> saves;
  if (mlir::failed(nnsc::checkProgram(*program, arch, context, saves)))
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module = nnsc::mlirGen(*program, arch, context);
  if (!module)
    return 0;
  if (mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "fuzz-frontend: Sema accepted a program whose IR does not verify\n");
    std::abort();
  }
  return 0;
}

//===- Parser.cpp - nns source parser ---------------------------*- C++ -*-===//
//
// The only file that includes ANTLR-generated headers. Syntax errors become MLIR diagnostics.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Frontend/Parser.h"

#include "NNSLexer.h"
#include "NNSParser.h"
#include "antlr4-runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

using namespace mlir;

namespace nnsc {
namespace {

/// Forwards ANTLR syntax errors to the MLIR diagnostic engine with the source location.
class DiagnosticErrorListener : public antlr4::BaseErrorListener {
public:
  DiagnosticErrorListener(MLIRContext &context, StringRef fileName)
      : context(context), fileName(fileName) {}

  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t charPositionInLine,
                   const std::string &msg, std::exception_ptr) override {
    // ANTLR columns are 0-based, MLIR's 1-based.
    Location loc = FileLineColLoc::get(&context, fileName, line, charPositionInLine + 1);
    emitError(loc) << "syntax error: " << msg;
    ++numErrors;
  }

  unsigned numErrors = 0;

private:
  MLIRContext &context;
  std::string fileName;
};

} // namespace

LogicalResult parseSyntax(llvm::SourceMgr &sourceMgr, MLIRContext &context) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  antlr4::ANTLRInputStream input(buffer->getBuffer().data(), buffer->getBufferSize());
  grammar::NNSLexer lexer(&input);
  antlr4::CommonTokenStream tokens(&lexer);
  grammar::NNSParser parser(&tokens);

  DiagnosticErrorListener listener(context, buffer->getBufferIdentifier());
  lexer.removeErrorListeners();
  lexer.addErrorListener(&listener);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);

  parser.program();
  return success(listener.numErrors == 0);
}

} // namespace nnsc

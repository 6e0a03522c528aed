//===- Parser.h - nns source parser -----------------------------*- C++ -*-===//

#ifndef NNSC_FRONTEND_PARSER_H
#define NNSC_FRONTEND_PARSER_H

#include "nnsc/Frontend/AST.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>

namespace nnsc {

/// Parses the main buffer of `sourceMgr` into an AST whose locations are FileLineColLocs in
/// `context`. Every syntax error is reported as an MLIR diagnostic at its file:line:col;
/// returns nullopt if there was any.
std::optional<ast::Program> parseProgram(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context);

} // namespace nnsc

#endif // NNSC_FRONTEND_PARSER_H

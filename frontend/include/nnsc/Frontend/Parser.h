//===- Parser.h - nns source parser -----------------------------*- C++ -*-===//

#ifndef NNSC_FRONTEND_PARSER_H
#define NNSC_FRONTEND_PARSER_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/SourceMgr.h"

namespace nnsc {

/// Parses the main buffer of `sourceMgr` as an nns program. Every syntax error is reported as
/// an MLIR diagnostic at its file:line:col through `context`; returns failure if there was any.
mlir::LogicalResult parseSyntax(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context);

} // namespace nnsc

#endif // NNSC_FRONTEND_PARSER_H

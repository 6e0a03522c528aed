//===- Unroll.h - compile-time loops over integers --------------*- C++ -*-===//

#ifndef NNSC_FRONTEND_UNROLL_H
#define NNSC_FRONTEND_UNROLL_H

#include "nnsc/Frontend/AST.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace nnsc {

/// Evaluates a loop bound or step (`what`: "a loop bound") to an integer constant, or reports
/// why it is not one.
using BoundEvaluator = llvm::function_ref<mlir::FailureOr<int64_t>(ast::Expr &, llvm::StringRef)>;

/// Replaces every `for i in a..b { body }` or `for i in a..b:step { body }` in `block` (nested
/// ones too) by one copy of the body per value of Python's range(a, b, step), with `i` replaced
/// by the integer literal of that iteration. Bounds are evaluated before the loop is unrolled,
/// so they may use the variables of enclosing loops. Copies carry ".<i>" in their unroll suffix
/// so that saves inside stay distinct. Reports a zero step, a loop of more than 4096 copies
/// and a trace of more than 65536 statements once unrolled.
mlir::LogicalResult unrollRangeLoops(ast::Block &block, BoundEvaluator evaluate);

} // namespace nnsc

#endif // NNSC_FRONTEND_UNROLL_H

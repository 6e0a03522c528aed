//===- Unroll.h - compile-time loops over integers --------------*- C++ -*-===//

#ifndef NNSC_FRONTEND_UNROLL_H
#define NNSC_FRONTEND_UNROLL_H

#include "nnsc/Frontend/AST.h"

#include "mlir/Support/LogicalResult.h"

namespace nnsc {

/// Replaces every `for i in a..b { body }` in `block` (nested ones too) by b - a copies of the
/// body with `i` replaced by the integer literal of each iteration. Copies carry ".<i>" in
/// their unroll suffix so that saves inside stay distinct. Reports non-constant bounds, a loop
/// of more than 4096 copies and a trace of more than 65536 statements once unrolled.
mlir::LogicalResult unrollRangeLoops(ast::Block &block);

} // namespace nnsc

#endif // NNSC_FRONTEND_UNROLL_H

//===- ScheduleUtils.h - shared helpers of the scheduling passes -*- C++ -*-===//

#ifndef NNSC_DIALECT_TRANSFORMS_SCHEDULEUTILS_H
#define NNSC_DIALECT_TRANSFORMS_SCHEDULEUTILS_H

#include "nnsc/Dialect/NNS/NNSOps.h"
#include "nnsc/Dialect/NNS/Passes.h"

#include <tuple>

namespace nnsc::nns {

/// The site event of `op` set by nns-assign-sites; -1 when it depends on no site.
inline int64_t siteOf(mlir::Operation *op) {
  auto attr = op->getAttrOfType<mlir::IntegerAttr>(kAtAttr);
  return attr ? attr.getInt() : -1;
}

/// The op's ancestor (or itself) directly inside the trace body, which carries the step guard
/// and invoke marks.
inline mlir::Operation *topLevelOp(mlir::Operation *op) {
  while (!mlir::isa<TraceOp>(op->getParentOp()))
    op = op->getParentOp();
  return op;
}

/// Where and when an op runs: site, step guard, invoke (-1 outside invokes).
using RunContext = std::tuple<int64_t, mlir::Attribute, int64_t>;

inline RunContext contextOf(mlir::Operation *op) {
  mlir::Operation *top = topLevelOp(op);
  auto invoke = top->getAttrOfType<mlir::IntegerAttr>(kInvokeAttr);
  return {siteOf(op), top->getAttr(kGuardAttr), invoke ? invoke.getInt() : -1};
}

} // namespace nnsc::nns

#endif // NNSC_DIALECT_TRANSFORMS_SCHEDULEUTILS_H

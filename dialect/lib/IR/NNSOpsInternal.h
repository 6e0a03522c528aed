//===- NNSOpsInternal.h - shared by the nns op implementations --*- C++ -*-===//
//
// Private to dialect/lib/IR: the verifier helpers that more than one file of ops uses
// (NNSOps.cpp, NNSShapeOps.cpp) and the custom assembly directives the generated op code in
// NNSOps.cpp calls (defined next to their ops).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_LIB_IR_NNSOPSINTERNAL_H
#define NNSC_DIALECT_LIB_IR_NNSOPSINTERNAL_H

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "mlir/IR/OpImplementation.h"

namespace nnsc::nns {

inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

/// Checks that `value` broadcasts to exactly `target` (a write, a skip, a scatter).
mlir::LogicalResult verifyBroadcastsTo(mlir::Operation *op, mlir::RankedTensorType value,
                                       mlir::RankedTensorType target, llvm::StringRef what);

/// Checks that `dim` indexes a dimension of a rank-`rank` tensor.
mlir::LogicalResult verifyDim(mlir::Operation *op, int64_t dim, int64_t rank);

/// `shape` without dimension `dim`.
llvm::SmallVector<int64_t> withoutDim(llvm::ArrayRef<int64_t> shape, int64_t dim);

/// `[read, write]`: nns.kernel's access set (NNSScheduleOps.cpp).
mlir::ParseResult parseSiteAccessList(mlir::OpAsmParser &parser, mlir::ArrayAttr &access);
void printSiteAccessList(mlir::OpAsmPrinter &printer, KernelOp op, mlir::ArrayAttr access);

} // namespace nnsc::nns

#endif // NNSC_DIALECT_LIB_IR_NNSOPSINTERNAL_H

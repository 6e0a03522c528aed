//===- NNSOps.h - nns dialect operations ------------------------*- C++ -*-===//

#ifndef NNSC_DIALECT_NNS_NNSOPS_H
#define NNSC_DIALECT_NNS_NNSOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "nnsc/Dialect/NNS/NNSDialect.h"

#define GET_OP_CLASSES
#include "nnsc/Dialect/NNS/NNSOps.h.inc"

namespace nnsc::nns {

/// NumPy broadcasting of two shapes (ShapedType::kDynamic for the token dimension). A dynamic
/// dimension broadcasts with 1 and with itself; against another size it is assumed to match
/// (checked at run time). Returns failure if the static sizes conflict.
mlir::LogicalResult broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                                    llvm::SmallVectorImpl<int64_t> &result);

/// The type of `nns.slice` of `source` along `dim` (Python slice semantics; a null `stop` is
/// the end): static where the sliced dimension is static.
mlir::RankedTensorType inferSliceType(mlir::RankedTensorType source, int64_t dim, int64_t start,
                                      mlir::IntegerAttr stop, int64_t stride);

} // namespace nnsc::nns

#endif // NNSC_DIALECT_NNS_NNSOPS_H

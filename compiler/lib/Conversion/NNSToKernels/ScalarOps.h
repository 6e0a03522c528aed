//===- ScalarOps.h - scalar arith of nns element types ----------*- C++ -*-===//
//
// The scalar bodies of the kernels' elementwise loops and reductions: conversions between the
// element types of nns values (f32, i64, i1) and the unary, binary and comparison kinds of the
// nns dialect on one element.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_CONVERSION_NNSTOKERNELS_SCALAROPS_H
#define NNSC_CONVERSION_NNSTOKERNELS_SCALAROPS_H

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "mlir/IR/Builders.h"

namespace nnsc::kernels {

/// Converts a scalar between the element types of nns values (f32, i64, i1).
mlir::Value convert(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Type to);

/// `kind` applied to one element `x`.
mlir::Value unary(mlir::OpBuilder &b, mlir::Location loc, nns::UnaryKind kind, mlir::Value x);

/// `kind` of two elements, both converted to `type` first.
mlir::Value binary(mlir::OpBuilder &b, mlir::Location loc, nns::BinaryKind kind, mlir::Value x,
                   mlir::Value y, mlir::Type type);

/// `kind` comparison of two elements in their common type (f32 if either is a float).
mlir::Value compare(mlir::OpBuilder &b, mlir::Location loc, nns::CompareKind kind, mlir::Value x,
                    mlir::Value y);

} // namespace nnsc::kernels

#endif // NNSC_CONVERSION_NNSTOKERNELS_SCALAROPS_H

//===- NNSDialect.h - nns dialect -------------------------------*- C++ -*-===//

#ifndef NNSC_DIALECT_NNS_NNSDIALECT_H
#define NNSC_DIALECT_NNS_NNSDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "nnsc/Dialect/NNS/NNSEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "nnsc/Dialect/NNS/NNSManifest.h.inc"

#include "nnsc/Dialect/NNS/NNSOpsDialect.h.inc"

#endif // NNSC_DIALECT_NNS_NNSDIALECT_H

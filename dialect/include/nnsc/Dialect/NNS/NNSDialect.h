//===- NNSDialect.h - nns dialect -------------------------------*- C++ -*-===//

#ifndef NNSC_DIALECT_NNS_NNSDIALECT_H
#define NNSC_DIALECT_NNS_NNSDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "nnsc/Dialect/NNS/NNSOpsDialect.h.inc"

#endif // NNSC_DIALECT_NNS_NNSDIALECT_H

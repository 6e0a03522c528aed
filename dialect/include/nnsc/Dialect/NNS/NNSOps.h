//===- NNSOps.h - nns dialect operations ------------------------*- C++ -*-===//

#ifndef NNSC_DIALECT_NNS_NNSOPS_H
#define NNSC_DIALECT_NNS_NNSOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "nnsc/Dialect/NNS/NNSDialect.h"

#define GET_OP_CLASSES
#include "nnsc/Dialect/NNS/NNSOps.h.inc"

#endif // NNSC_DIALECT_NNS_NNSOPS_H

//===- Passes.h - conversions of the compiler -------------------*- C++ -*-===//

#ifndef NNSC_CONVERSION_PASSES_H
#define NNSC_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace nnsc {

#define GEN_PASS_DECL
#include "nnsc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nnsc/Conversion/Passes.h.inc"

} // namespace nnsc

#endif // NNSC_CONVERSION_PASSES_H

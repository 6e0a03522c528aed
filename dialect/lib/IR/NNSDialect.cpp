//===- NNSDialect.cpp - nns dialect -----------------------------*- C++ -*-===//

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Dialect/NNS/NNSOps.h"

using namespace mlir;
using namespace nnsc::nns;

#include "nnsc/Dialect/NNS/NNSOpsDialect.cpp.inc"

void NNSDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "nnsc/Dialect/NNS/NNSOps.cpp.inc"
      >();
}

//===- NNSOps.td - nns dialect operations ------------------*- tablegen -*-===//
//
// The op set of a trace program, one file per concern. Values are tensors in value
// semantics. See docs/Dialect.md for the design.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSOPS_TD
#define NNSC_DIALECT_NNS_NNSOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSAttrs.td"
include "nnsc/Dialect/NNS/NNSTypes.td"
include "nnsc/Dialect/NNS/NNSStructureOps.td"
include "nnsc/Dialect/NNS/NNSSiteOps.td"
include "nnsc/Dialect/NNS/NNSMathOps.td"
include "nnsc/Dialect/NNS/NNSShapeOps.td"
include "nnsc/Dialect/NNS/NNSScheduleOps.td"

#endif // NNSC_DIALECT_NNS_NNSOPS_TD

//===- TargetInfo.h - what a bundle is compiled for -------------*- C++ -*-===//
//
// nns IR names sites and modules but not the model; the conversion to kernel-level IR needs
// the architecture, its schema hash and dimensions, the source hash and the schema index of
// every module the program calls. `annotateTarget` records them as the module attribute
// `nns.target` so that the passes (and lit tests on .mlir files) need no schema.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_CONVERSION_TARGETINFO_H
#define NNSC_CONVERSION_TARGETINFO_H

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Schema/Architecture.h"

#include "mlir/IR/BuiltinOps.h"

namespace nnsc::kernels {

/// Name of the module attribute written by annotateTarget (declared in NNSDialect.td).
inline constexpr llvm::StringLiteral kTargetAttr = nns::NNSDialect::TargetAttrHelper::getNameStr();

/// Sets `nns.target` on `module`: source_hash (hex SHA-256 of `source`), arch, schema_hash,
/// dims and modules (path -> schema index of each `nns.call_module`). Fails with an error
/// when a called module is not in the architecture.
mlir::LogicalResult annotateTarget(mlir::ModuleOp module, const schema::Architecture &arch,
                                   llvm::StringRef source);

} // namespace nnsc::kernels

#endif // NNSC_CONVERSION_TARGETINFO_H

//===- Passes.h - scheduling passes of the nns dialect ----------*- C++ -*-===//

#ifndef NNSC_DIALECT_NNS_PASSES_H
#define NNSC_DIALECT_NNS_PASSES_H

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace nnsc::nns {

#define GEN_PASS_DECL
#include "nnsc/Dialect/NNS/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nnsc/Dialect/NNS/Passes.h.inc"

/// The scheduling passes in order: assign sites, step guards, order invokes, allocate the
/// frame, fuse sites.
void buildSchedulePipeline(mlir::OpPassManager &pm);

/// Names of the attributes the scheduling passes attach, declared with their types in
/// NNSDialect.td (discardableAttrs; the dialect verifier checks them).
inline constexpr llvm::StringLiteral kAtAttr = NNSDialect::AtAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kGuardAttr = NNSDialect::GuardAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kPerStepAttr = NNSDialect::PerStepAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kInvokeAttr = NNSDialect::InvokeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kInvokesAttr = NNSDialect::InvokesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kFrameAttr = NNSDialect::FrameAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kFrameBytesAttr =
    NNSDialect::FrameBytesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kFrameHeapAttr = NNSDialect::FrameHeapAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kStoredGuardAttr =
    NNSDialect::StoredGuardAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kStoredInvokeAttr =
    NNSDialect::StoredInvokeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSaveIndexAttr = NNSDialect::SaveIndexAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kTracesAttr = NNSDialect::TracesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kManifestAttr = NNSDialect::ManifestAttrHelper::getNameStr();

} // namespace nnsc::nns

#endif // NNSC_DIALECT_NNS_PASSES_H

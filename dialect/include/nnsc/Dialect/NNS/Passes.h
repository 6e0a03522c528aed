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

/// Names of the attributes the scheduling passes attach.
constexpr const char *kAtAttr = "nns.at";
constexpr const char *kGuardAttr = "nns.guard";
constexpr const char *kInvokeAttr = "nns.invoke";
constexpr const char *kFrameAttr = "nns.frame";
constexpr const char *kFrameBytesAttr = "nns.frame_bytes";
/// On a trace: the frame offsets of heap-copy pointers (slots of run-time shape), ascending.
constexpr const char *kFrameHeapAttr = "nns.frame_heap";
/// On a frame load: the step guard of the value's store, and its invoke's name if any.
constexpr const char *kStoredGuardAttr = "nns.stored_guard";
constexpr const char *kStoredInvokeAttr = "nns.stored_invoke";
constexpr const char *kTracesAttr = "nns.traces";
/// On a save or cache that was in a steps loop: saved once per step, as `NAME.<step>`.
constexpr const char *kPerStepAttr = "nns.per_step";

} // namespace nnsc::nns

#endif // NNSC_DIALECT_NNS_PASSES_H

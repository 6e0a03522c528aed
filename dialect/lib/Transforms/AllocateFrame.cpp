//===- AllocateFrame.cpp - nns-allocate-frame -----------------------------===//

#include "ScheduleUtils.h"
#include "SiteRuns.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace nnsc::nns {
#define GEN_PASS_DEF_NNSALLOCATEFRAME
#include "nnsc/Dialect/NNS/Passes.h.inc"

namespace {

/// Bytes of a frame slot: the step its value was stored at (8 bytes, so that a load can tell a
/// value never computed from a computed one), then the elements inline, or a pointer and each
/// dynamic size (T; an attention pattern's S) when the shape has them.
int64_t slotBytes(RankedTensorType type) {
  if (!type.hasStaticShape())
    return 8 + 8 + 8 * type.getNumDynamicDims();
  int64_t elementBytes = type.getElementType().isInteger(1) ? 1 : type.getElementTypeBitWidth() / 8;
  return 8 + llvm::alignTo(type.getNumElements() * elementBytes, 8);
}

struct AllocateFrame : impl::NNSAllocateFrameBase<AllocateFrame> {
  void runOnOperation() override {
    OpBuilder builder(&getContext());
    for (auto trace : getOperation().getOps<TraceOp>()) {
      int64_t bytes = 0;
      SmallVector<int64_t> heapPointers;
      SiteRuns runs(trace);
      trace.walk([&](Operation *op) {
        if (op->getNumResults() == 0 || siteOf(op) < 0 || isa<TraceOp>(op))
          return;
        SmallVector<int64_t> offsets;
        bool any = false;
        for (Value result : op->getResults()) {
          bool crosses = llvm::any_of(result.getUsers(),
                                      [&](Operation *user) { return !runs.sameRun(op, user); });
          offsets.push_back(crosses ? bytes : -1);
          if (crosses) {
            auto type = cast<RankedTensorType>(result.getType());
            if (!type.hasStaticShape())
              heapPointers.push_back(bytes + 8);
            bytes += slotBytes(type);
            any = true;
          }
        }
        if (any)
          op->setAttr(kFrameAttr, builder.getDenseI64ArrayAttr(offsets));
      });
      trace->setAttr(kFrameBytesAttr, builder.getI64IntegerAttr(bytes));
      trace->setAttr(kFrameHeapAttr, builder.getDenseI64ArrayAttr(heapPointers));
    }
  }
};

} // namespace
} // namespace nnsc::nns

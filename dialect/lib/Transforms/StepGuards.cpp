//===- StepGuards.cpp - nns-step-guards -----------------------------------===//

#include "ScheduleUtils.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace nnsc::nns {
#define GEN_PASS_DEF_NNSSTEPGUARDS
#include "nnsc/Dialect/NNS/Passes.h.inc"

namespace {

struct StepGuards : impl::NNSStepGuardsBase<StepGuards> {
  void runOnOperation() override {
    OpBuilder builder(&getContext());
    auto prefill = builder.getDenseI64ArrayAttr({0, 1, 1});
    for (auto trace : getOperation().getOps<TraceOp>()) {
      SmallVector<StepsOp> loops;
      trace.walk([&](StepsOp steps) { loops.push_back(steps); });
      // Ops outside loops run at the prefill step only; invoke bodies are marked op by op.
      auto markBlock = [&](Block &block) {
        for (Operation &op : block)
          if (!isa<StepsOp, YieldOp, InvokeOp>(op))
            op.setAttr(kGuardAttr, prefill);
      };
      markBlock(trace.getBody().front());
      trace.walk([&](InvokeOp invoke) { markBlock(invoke.getBody().front()); });
      for (StepsOp steps : loops) {
        std::optional<int64_t> stop = steps.getStop();
        auto guard =
            builder.getDenseI64ArrayAttr({steps.getStart(), stop ? *stop : -1, steps.getStride()});
        Block &body = steps.getBody().front();
        builder.setInsertionPoint(steps);
        auto step = StepOp::create(builder, steps.getLoc(),
                                   RankedTensorType::get({}, builder.getI64Type()));
        step->setAttr(kGuardAttr, guard);
        step->setAttr(kAtAttr, builder.getI64IntegerAttr(-1));
        body.getArgument(0).replaceAllUsesWith(step);
        for (Operation &op : llvm::make_early_inc_range(body)) {
          if (isa<YieldOp>(op))
            continue;
          op.moveBefore(steps);
          op.setAttr(kGuardAttr, guard);
          // A loop over step 0 alone has the guard of the statements outside loops; its saves
          // are still per step (`NAME.0`).
          op.walk([&](Operation *nested) {
            if (isa<SaveOp, CacheOp>(nested))
              nested->setAttr(kPerStepAttr, builder.getUnitAttr());
          });
        }
        steps.erase();
      }
    }
  }
};

} // namespace
} // namespace nnsc::nns

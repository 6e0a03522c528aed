//===- OrderInvokes.cpp - nns-order-invokes -------------------------------===//

#include "ScheduleUtils.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace nnsc::nns {
#define GEN_PASS_DEF_NNSORDERINVOKES
#include "nnsc/Dialect/NNS/Passes.h.inc"

namespace {

/// The step guard of the closest enclosing op that has one.
Attribute guardOf(Operation *op) {
  while (op && !op->hasAttr(kGuardAttr))
    op = op->getParentOp();
  return op ? op->getAttr(kGuardAttr) : Attribute();
}

struct OrderInvokes : impl::NNSOrderInvokesBase<OrderInvokes> {
  void runOnOperation() override {
    OpBuilder builder(&getContext());
    for (auto trace : getOperation().getOps<TraceOp>()) {
      SmallVector<InvokeOp> invokes(trace.getBody().front().getOps<InvokeOp>());
      SmallVector<Attribute> names;
      for (InvokeOp invoke : invokes)
        names.push_back(invoke.getNameAttr());
      trace->setAttr(kInvokesAttr, builder.getArrayAttr(names));
      for (InvokeOp invoke : invokes) {
        Block &body = invoke.getBody().front();
        auto yield = cast<YieldOp>(body.getTerminator());
        for (auto [result, value] : llvm::zip(invoke.getResults(), yield.getValues())) {
          Operation *def = value.getDefiningOp();
          for (OpOperand &use : result.getUses()) {
            Operation *user = use.getOwner();
            if (def && siteOf(user) >= 0 && siteOf(def) > siteOf(user) &&
                guardOf(user) == guardOf(def)) {
              InFlightDiagnostic diag = user->emitError()
                                        << "uses a value of invoke '" << invoke.getName()
                                        << "' that exists only at site event " << siteOf(def)
                                        << ", after this one (" << siteOf(user)
                                        << ") in the same forward pass";
              diag.attachNote(def->getLoc()) << "the value is computed here";
              return signalPassFailure();
            }
          }
          result.replaceAllUsesWith(value);
        }
        for (Operation &op : llvm::make_early_inc_range(body)) {
          if (&op == yield.getOperation())
            continue;
          op.moveBefore(invoke);
          op.setAttr(kInvokeAttr, builder.getI64IntegerAttr(invoke.getIndex()));
        }
        invoke.erase();
      }
    }
  }
};

} // namespace
} // namespace nnsc::nns

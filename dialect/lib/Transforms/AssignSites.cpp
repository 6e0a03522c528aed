//===- AssignSites.cpp - nns-assign-sites ---------------------------------===//

#include "ScheduleUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace nnsc::nns {
#define GEN_PASS_DEF_NNSASSIGNSITES
#include "nnsc/Dialect/NNS/Passes.h.inc"

namespace {

/// The firing order a side effect is bound to, if it is bound to one.
std::optional<int64_t> fixedSite(Operation *op) {
  if (auto read = dyn_cast<SiteReadOp>(op))
    return read.getOrder();
  if (auto write = dyn_cast<SiteWriteOp>(op))
    return write.getOrder();
  if (auto update = dyn_cast<SiteUpdateOp>(op))
    return update.getOrder();
  if (auto cache = dyn_cast<CacheOp>(op))
    return cache.getOrder();
  if (auto skip = dyn_cast<SkipOp>(op))
    return skip.getInputOrder();
  return std::nullopt;
}

/// The op that computes `value`: for a result of an invoke, the op inside it whose value the
/// invoke yields. The invoke as a whole ends at its last site, but a later invoke may use its
/// value from the site where it is computed on (docs/Language.md, across invokes).
Operation *definingWork(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (auto invoke = dyn_cast_or_null<InvokeOp>(result ? result.getOwner() : nullptr)) {
    auto yield = cast<YieldOp>(invoke.getBody().front().getTerminator());
    return yield.getValues()[result.getResultNumber()].getDefiningOp();
  }
  return value.getDefiningOp();
}

struct AssignSites : impl::NNSAssignSitesBase<AssignSites> {
  void runOnOperation() override {
    for (auto trace : getOperation().getOps<TraceOp>())
      if (failed(assign(trace)))
        return signalPassFailure();
  }

  LogicalResult assign(TraceOp trace) {
    int64_t first = -1, last = -1;
    // The last site of each invoke: a stop() in an invoke ends that invoke's prompt only, so
    // it fires once that invoke's own sites are done, whatever later invokes still need.
    llvm::DenseMap<Operation *, int64_t> lastOfInvoke;
    trace.walk([&](Operation *op) {
      if (std::optional<int64_t> site = fixedSite(op)) {
        first = first < 0 ? *site : std::min(first, *site);
        last = std::max(last, *site);
        if (auto invoke = op->getParentOfType<InvokeOp>()) {
          auto [it, inserted] = lastOfInvoke.try_emplace(invoke, *site);
          it->second = std::max(it->second, *site);
        }
      }
    });
    OpBuilder builder(trace.getContext());
    auto set = [&](Operation *op, int64_t site) {
      op->setAttr(kAtAttr, builder.getI64IntegerAttr(site));
    };
    // Post-order: an op's operands and nested ops are assigned before the op itself.
    WalkResult result = trace.walk([&](Operation *op) -> WalkResult {
      if (isa<TraceOp, StepsOp, YieldOp>(op))
        return WalkResult::advance();
      int64_t site = -1;
      Operation *source = nullptr;
      auto after = [&](Value value) {
        Operation *def = definingWork(value);
        if (def && siteOf(def) > site) {
          site = siteOf(def);
          source = def;
        }
      };
      for (Value operand : op->getOperands())
        after(operand);
      // Work in a branch runs once its condition exists; pure site-free values stay free of
      // sites (recomputed where used).
      if (!isPure(op) || site >= 0)
        for (auto ifOp = op->getParentOfType<IfOp>(); ifOp; ifOp = ifOp->getParentOfType<IfOp>())
          after(ifOp.getCondition());
      for (Region &region : op->getRegions())
        region.walk([&](Operation *nested) {
          if (!isa<YieldOp>(nested))
            site = std::max(site, siteOf(nested));
        });
      if (std::optional<int64_t> own = fixedSite(op)) {
        if (site > *own) {
          InFlightDiagnostic diag = op->emitError()
                                    << "uses a value that exists only at site event " << site
                                    << ", after this site (" << *own << ") has fired";
          diag.attachNote(source->getLoc()) << "the value is computed here";
          return WalkResult::interrupt();
        }
        site = *own;
      } else if (auto invoke = op->getParentOfType<InvokeOp>(); invoke && isa<StopOp>(op)) {
        auto own = lastOfInvoke.find(invoke);
        site = std::max(site, own != lastOfInvoke.end() ? own->second : first);
      } else if (isa<StopOp, FinishOp>(op)) {
        site = last;
      } else if (isa<SaveOp>(op) && site < 0) {
        site = first;
      }
      if (site < 0 && (isa<SaveOp, StopOp, FinishOp>(op))) {
        op->emitError() << "'" << op->getName() << "' needs at least one site in its trace";
        return WalkResult::interrupt();
      }
      set(op, site);
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }
};

} // namespace
} // namespace nnsc::nns

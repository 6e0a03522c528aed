//===- SiteRuns.cpp - the group loops each site kernel will have ----------===//

#include "SiteRuns.h"
#include "ScheduleUtils.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace nnsc::nns {

/// The sites whose kernels contain the top-level op `op`, as nns-fuse-sites copies them.
static llvm::SmallSetVector<int64_t, 4> kernelsOf(Operation *op) {
  llvm::SmallSetVector<int64_t, 4> sites;
  if (isa<CacheOp>(op))
    return sites;
  if (isa<IfOp>(op)) {
    op->walk([&](Operation *nested) {
      if (!isa<IfOp, YieldOp>(nested) && siteOf(nested) >= 0)
        sites.insert(siteOf(nested));
    });
    return sites;
  }
  if (siteOf(op) >= 0)
    sites.insert(siteOf(op));
  return sites;
}

SiteRuns::SiteRuns(TraceOp trace) {
  llvm::DenseMap<int64_t, std::pair<RunContext, int64_t>> last;
  for (Operation &op : trace.getBody().front()) {
    RunContext context = contextOf(&op);
    for (int64_t site : kernelsOf(&op)) {
      auto [it, inserted] = last.try_emplace(site, context, 0);
      auto &[previous, run] = it->second;
      if (!inserted && (std::get<1>(previous) != std::get<1>(context) ||
                        std::get<2>(previous) != std::get<2>(context)))
        ++run;
      previous = context;
      runs[{&op, site}] = run;
    }
  }
}

int64_t SiteRuns::runOf(Operation *op, int64_t site) const {
  auto it = runs.find({topLevelOp(op), site});
  return it == runs.end() ? -1 : it->second;
}

bool SiteRuns::sameRun(Operation *def, Operation *user) const {
  if (contextOf(def) != contextOf(user))
    return false;
  int64_t run = runOf(def, siteOf(def));
  return run >= 0 && run == runOf(user, siteOf(def));
}

} // namespace nnsc::nns

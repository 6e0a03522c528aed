//===- AccessOrder.cpp - order of site accesses within a trace --*- C++ -*-===//

#include "AccessOrder.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

bool StepSet::contains(int64_t step) const {
  return step >= start && (!stop || step < *stop) && (step - start) % stride == 0;
}

bool StepSet::intersects(const StepSet &other) const {
  // Two arithmetic progressions meet within lcm(strides) of the later start if at all, and
  // stride * other.stride bounds the lcm.
  int64_t from = std::max(start, other.start);
  int64_t limit = from + stride * other.stride;
  for (int64_t step = start; step <= limit; step += stride) {
    if (stop && step >= *stop)
      return false;
    if (step >= from && other.contains(step))
      return true;
  }
  return false;
}

static std::string quoted(const std::string &path) { return "'" + path + "'"; }

LogicalResult AccessOrder::checkReachable(int order, const std::string &what, const StepSet &steps,
                                          int invoke, Location loc) {
  for (const AccessRecord &r : records) {
    if (!r.steps.intersects(steps))
      continue;
    if (r.kind == AccessRecord::Kind::Stop && (r.invoke < 0 || r.invoke == invoke) &&
        order > r.order) {
      InFlightDiagnostic diag = emitError(loc) << what << " is needed after stop(), but ";
      diag << (r.invoke < 0 ? "the forward pass" : "this invoke's forward pass");
      if (r.order < 0)
        diag << " stops before any site";
      else
        diag << " stops after '" << arch.sites()[r.order].path << "'";
      diag.attachNote(r.loc) << "stop() here";
      return failure();
    }
    if (r.kind == AccessRecord::Kind::Skip && r.invoke == invoke && order > r.order &&
        order < r.endOrder) {
      const schema::Module &skipped = arch.modules()[arch.sites()[r.order].module];
      InFlightDiagnostic diag = emitError(loc) << what << " never fires: it is inside '"
                                               << skipped.path << "', which is skipped";
      diag.attachNote(r.loc) << "skipped here";
      return failure();
    }
  }
  return success();
}

LogicalResult AccessOrder::access(int site, const StepSet &steps, int invoke, Location loc) {
  const std::string what = quoted(arch.sites()[site].path);
  const AccessRecord *latest = nullptr;
  for (const AccessRecord &r : records) {
    bool ordered = r.kind == AccessRecord::Kind::Access || r.kind == AccessRecord::Kind::Skip;
    if (ordered && r.invoke == invoke && r.order > site && r.steps.intersects(steps) &&
        (!latest || r.order > latest->order))
      latest = &r;
  }
  if (latest) {
    InFlightDiagnostic diag = emitError(loc)
                              << "out-of-order access: " << what << " fires before " << latest->what
                              << ", which this trace already accessed in the "
                              << "same step";
    diag.attachNote(latest->loc) << latest->what << " accessed here";
    return failure();
  }
  if (failed(checkReachable(site, what, steps, invoke, loc)))
    return failure();
  records.push_back({AccessRecord::Kind::Access, steps, invoke, site, site, loc, what});
  return success();
}

LogicalResult AccessOrder::cache(int site, const StepSet &steps, int invoke, Location loc) {
  const std::string what = quoted(arch.sites()[site].path);
  if (failed(checkReachable(site, what, steps, invoke, loc)))
    return failure();
  records.push_back({AccessRecord::Kind::Cache, steps, invoke, site, site, loc, what});
  return success();
}

LogicalResult AccessOrder::skip(int module, const StepSet &steps, int invoke, Location loc) {
  const schema::Module &m = arch.modules()[module];
  const std::string what = "'.skip()' of " + quoted(m.path);
  for (const AccessRecord &r : records) {
    bool ordered = r.kind == AccessRecord::Kind::Access || r.kind == AccessRecord::Kind::Skip;
    if (ordered && r.invoke == invoke && r.order > m.inputSite && r.steps.intersects(steps)) {
      InFlightDiagnostic diag = emitError(loc)
                                << what << " comes after " << r.what
                                << " was accessed; by then the module has already run";
      diag.attachNote(r.loc) << r.what << " accessed here";
      return failure();
    }
  }
  if (failed(checkReachable(m.inputSite, what, steps, invoke, loc)))
    return failure();
  records.push_back(
      {AccessRecord::Kind::Skip, steps, invoke, m.inputSite, m.outputSite, loc, what});
  return success();
}

void AccessOrder::stop(const StepSet &steps, int invoke, Location loc) {
  int last = -1;
  for (const AccessRecord &r : records)
    if (r.kind != AccessRecord::Kind::Stop && (invoke < 0 || r.invoke == invoke) &&
        r.steps.intersects(steps))
      last = std::max(last, r.kind == AccessRecord::Kind::Skip ? r.endOrder : r.order);
  records.push_back({AccessRecord::Kind::Stop, steps, invoke, last, last, loc, "stop()"});
}

std::vector<AccessRecord> AccessOrder::takeSince(size_t checkpoint) {
  std::vector<AccessRecord> taken(std::make_move_iterator(records.begin() + checkpoint),
                                  std::make_move_iterator(records.end()));
  records.erase(records.begin() + checkpoint, records.end());
  return taken;
}

void AccessOrder::restore(std::vector<AccessRecord> taken) {
  for (AccessRecord &r : taken)
    records.push_back(std::move(r));
}

} // namespace nnsc

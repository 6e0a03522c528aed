//===- AccessOrder.h - order of site accesses within a trace ----*- C++ -*-===//
//
// A trace is sequential code over a model that only moves forward: within one step, each
// prompt's forward pass reaches sites in firing order. This tracker records every access with
// the steps it happens at and its invoke, and reports the accesses that would have to travel
// back in time: an earlier site after a later one, a site after stop(), a site inside a
// skipped module, a .skip() of a module that has already run.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_ACCESSORDER_H
#define NNSC_FRONTEND_ACCESSORDER_H

#include "nnsc/Schema/Architecture.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>
#include <vector>

namespace nnsc {

/// The steps a statement runs at: `steps[start:stop:stride]`; code outside loops is step 0.
struct StepSet {
  int64_t start = 0;
  std::optional<int64_t> stop = 1;
  int64_t stride = 1;

  bool contains(int64_t step) const;
  bool intersects(const StepSet &other) const;
};

/// One recorded access (complete before AccessOrder, whose inline members use vectors of it:
/// clang, unlike gcc, needs the complete type there).
struct AccessRecord {
  enum class Kind { Access, Cache, Skip, Stop };
  Kind kind;
  StepSet steps;
  int invoke;
  /// Site order; for Skip the module's input site, for Stop the last site the pass reaches
  /// (-1 if none). A Stop's invoke is -1 when it stops every invoke.
  int order;
  /// For Skip, the module's output site.
  int endOrder;
  mlir::Location loc;
  /// How messages name the record: "'model.layers.5.output'", "'.skip()' of 'model.layers.7'".
  std::string what;
};

class AccessOrder {
public:
  explicit AccessOrder(const schema::Architecture &arch) : arch(arch) {}

  /// A read or write of `site` by invoke `invoke` (0 without invokes).
  mlir::LogicalResult access(int site, const StepSet &steps, int invoke, mlir::Location loc);
  /// cache(site): checked against stop() and .skip(), but it does not order the program.
  mlir::LogicalResult cache(int site, const StepSet &steps, int invoke, mlir::Location loc);
  /// `module.skip(...)`: the module must not have run yet.
  mlir::LogicalResult skip(int module, const StepSet &steps, int invoke, mlir::Location loc);
  /// stop() in invoke `invoke`, or in every invoke (-1: a trace without invokes, or a stop()
  /// outside them): that invoke's forward pass ends after the last site it accessed so far.
  void stop(const StepSet &steps, int invoke, mlir::Location loc);
  /// Forgets every record, for the next trace.
  void clear() { records.clear(); }

  /// Branches of a run-time `if` exclude each other: the else branch is checked without the
  /// then branch's records, and both are kept afterwards.
  size_t checkpoint() const { return records.size(); }
  std::vector<AccessRecord> takeSince(size_t checkpoint);
  void restore(std::vector<AccessRecord> taken);

private:
  mlir::LogicalResult checkReachable(int order, const std::string &what, const StepSet &steps,
                                     int invoke, mlir::Location loc);

  const schema::Architecture &arch;
  std::vector<AccessRecord> records;
};

} // namespace nnsc

#endif // NNSC_FRONTEND_ACCESSORDER_H

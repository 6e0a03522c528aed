//===- SiteRuns.h - the group loops each site kernel will have --*- C++ -*-===//
//
// nns-lower-to-kernels emits each run of consecutive kernel ops with one step guard and
// invoke as its own loop over the groups, so a value lives only inside its run. The frame
// allocation and the fusion pass both need to know which uses leave their run; this class
// is the one statement of that rule (docs/Compiler.md, "Steps loops, runs and the frame").
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_TRANSFORMS_SITERUNS_H
#define NNSC_DIALECT_TRANSFORMS_SITERUNS_H

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "llvm/ADT/DenseMap.h"

namespace nnsc::nns {

/// The runs of every site kernel of one trace whose loops and invokes are inlined: for each
/// site, the trace's top-level ops that its kernel contains (ops at the site, `nns.if`s holding
/// one; top-level caches excluded, they run after everything else) numbered so that
/// consecutive ops with the same guard and invoke share a number.
class SiteRuns {
public:
  explicit SiteRuns(TraceOp trace);

  /// Whether `user` is in the same run as `def` in the kernel of `def`'s site, so it can use
  /// the value directly rather than through the frame.
  bool sameRun(mlir::Operation *def, mlir::Operation *user) const;

  /// The run of `op` (any op nested in the trace) in the kernel of `site`; -1 when that
  /// kernel does not contain its top-level op.
  int64_t runOf(mlir::Operation *op, int64_t site) const;

private:
  llvm::DenseMap<std::pair<mlir::Operation *, int64_t>, int64_t> runs;
};

} // namespace nnsc::nns

#endif // NNSC_DIALECT_TRANSFORMS_SITERUNS_H

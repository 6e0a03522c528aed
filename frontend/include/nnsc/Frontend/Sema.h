//===- Sema.h - semantic checks of an nns program ---------------*- C++ -*-===//
//
// Checks a parsed program against a model's architecture before anything runs: resolves
// module paths, aliases and negative indices, infers shapes with the symbolic token dimension
// T, type-checks expressions, writes and params, and checks that every trace touches sites in
// the order the model reaches them (within a step, across invokes, and against stop() and
// .skip()). Loops over integers are unrolled first. On success the AST carries the
// annotations MLIRGen needs.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_SEMA_H
#define NNSC_FRONTEND_SEMA_H

#include "nnsc/Frontend/AST.h"
#include "nnsc/Schema/Architecture.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace nnsc {

/// One tensor a request gets back from a trace.
struct SaveInfo {
  std::string trace;
  /// The name in the request's results; per-step saves get ".<step>" appended at run time.
  std::string name;
  ValueType type;
  bool perStep;
  /// True for the saves of cache(...), named after the site path.
  bool fromCache;
};

/// Checks `program` against `arch`, reporting every error as an MLIR diagnostic, and
/// annotates it for MLIRGen. `saves` receives what each trace returns.
mlir::LogicalResult checkProgram(ast::Program &program, const schema::Architecture &arch,
                                 mlir::MLIRContext &context, std::vector<SaveInfo> &saves);

} // namespace nnsc

#endif // NNSC_FRONTEND_SEMA_H

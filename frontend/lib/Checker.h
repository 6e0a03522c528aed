//===- Checker.h - the semantic checker behind checkProgram -----*- C++ -*-===//
//
// Internal to the frontend. Names, declarations and timing are checked in Sema.cpp,
// statements in SemaStmt.cpp and SemaControl.cpp (if, for, invoke), expressions in
// SemaExpr.cpp, SemaIndex.cpp (indexing, operators) and SemaCall.cpp (calls, site patterns).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_CHECKER_H
#define NNSC_FRONTEND_CHECKER_H

#include "AccessOrder.h"

#include "nnsc/Frontend/Sema.h"

#include "llvm/ADT/DenseMap.h"

#include <map>

namespace nnsc {

/// A value computed at site `order` of invoke `invoke`. Values crossing invokes must exist
/// before the later invoke needs them (all prompts share one forward pass).
struct Dep {
  int invoke;
  int order;
  mlir::Location loc;
  /// Computed outside any steps loop, i.e. at step 0 only.
  bool stepZero;
};

/// The sites a value depends on, at most one entry per (invoke, stepZero): the latest.
struct Avail {
  llvm::SmallVector<Dep, 2> deps;
  void merge(const Avail &other);
};

struct Binding {
  ValueType type;
  mlir::Location loc;
  Avail avail;
  ast::NameSource source = ast::NameSource::Local;
  /// Its definition failed to check; uses are not reported again.
  bool poisoned = false;
};

struct Scope {
  enum class Kind { Trace, Invoke, Branch, Steps };
  Kind kind;
  std::map<std::string, Binding> names;
  /// Names in the order they were first bound here.
  std::vector<std::string> order;
};

/// The source name of a builtin function or method (SemaExpr.cpp).
const char *builtinName(ast::Builtin fn);

/// A checked expression with an integer value known at compile time.
bool isIntConstant(const ast::Expr &e);

/// Appends to `diag` why the checked `e` is not an integer constant, naming the part of it that
/// is not one (a param, a run-time value, a float, a true division) where it can (SemaExpr.cpp).
void explainNotConstant(const ast::Expr &e, mlir::InFlightDiagnostic &diag);

/// Where the statement being checked runs.
struct StmtContext {
  std::string trace;
  StepSet steps;
  bool inSteps = false;
  bool inDeviceIf = false;
  bool inInvoke = false;
  bool traceHasInvokes = false;
  int invoke = 0;
  std::string invokeName;
  int numInvokes = 0;
  std::map<std::string, mlir::Location> invokeNames;
  /// Sites the enclosing run-time conditions depend on.
  Avail control;
};

class Checker {
public:
  Checker(const schema::Architecture &arch, mlir::MLIRContext &context,
          std::vector<SaveInfo> &saves)
      : arch(arch), context(context), saves(saves), order(arch) {}

  mlir::LogicalResult run(ast::Program &program);

private:
  // Declarations and statements (Sema.cpp, SemaStmt.cpp, SemaControl.cpp).
  mlir::LogicalResult checkParam(ast::ParamDecl &param);
  mlir::LogicalResult checkTrace(ast::TraceDecl &trace);
  /// Warns where the stop() calls of a multi-invoke trace end every invoke, so the whole
  /// request ends there (a stop() in one invoke ends that invoke alone).
  void warnRequestStops();
  bool checkBlock(ast::Block &block);
  mlir::LogicalResult checkStmt(ast::Stmt &stmt);
  mlir::LogicalResult checkAssign(ast::AssignStmt &stmt);
  mlir::LogicalResult checkSiteAssign(ast::AssignStmt &stmt, ast::Expr &siteExpr,
                                      std::vector<ast::Subscript> *subscripts,
                                      ast::Expr *view = nullptr);
  mlir::LogicalResult checkLocalIndexAssign(ast::AssignStmt &stmt, ast::IndexExpr &target);
  mlir::LogicalResult checkExprStmt(ast::ExprStmt &stmt);
  mlir::LogicalResult checkIf(ast::IfStmt &stmt);
  mlir::LogicalResult checkFor(ast::ForStmt &stmt);
  mlir::LogicalResult checkInvoke(ast::InvokeStmt &stmt);
  mlir::LogicalResult checkCache(ast::CallExpr &call);
  mlir::LogicalResult checkSkip(ast::CallExpr &call);
  mlir::LogicalResult recordSave(const std::string &name, const ValueType &type, mlir::Location loc,
                                 bool fromCache);
  mlir::LogicalResult checkWritable(int site, mlir::Location loc);
  mlir::LogicalResult checkInTime(const Avail &avail, int order, mlir::Location loc);
  mlir::LogicalResult checkAssignable(ast::Expr &value, const ValueType &target,
                                      const std::string &what, mlir::Location loc);

  // Expressions (SemaExpr.cpp, SemaIndex.cpp, SemaCall.cpp).
  /// Resolves `e` to an entity; values get their type. Site reads are not yet registered.
  mlir::LogicalResult expr(ast::Expr &e, Avail &avail);
  /// Like expr(), but `e` must be a value; a site is read here.
  mlir::LogicalResult value(ast::Expr &e, Avail &avail);
  mlir::LogicalResult name(ast::NameExpr &e, Avail &avail);
  mlir::LogicalResult member(ast::MemberExpr &e, Avail &avail);
  mlir::LogicalResult index(ast::IndexExpr &e, Avail &avail);
  mlir::LogicalResult call(ast::CallExpr &e, Avail &avail);
  mlir::LogicalResult builtin(ast::CallExpr &e, ast::Builtin fn, ast::Expr *receiver, Avail &avail);
  mlir::LogicalResult moduleCall(ast::CallExpr &e, int module, Avail &avail);
  /// sum, mean, max, min, argmax, argmin, norm: over `dim` or, without it, every dimension;
  /// `keepdim=` (SemaReduce.cpp).
  mlir::LogicalResult reduction(ast::CallExpr &e, ast::Builtin fn, std::vector<ast::Expr *> &pos,
                                std::map<std::string, ast::Expr *> &kw, Avail &avail);
  /// unsqueeze, view, reshape, transpose, outer, expand, broadcast_to (SemaShape.cpp).
  mlir::LogicalResult shapeBuiltin(ast::CallExpr &e, ast::Builtin fn, std::vector<ast::Expr *> &pos,
                                   std::map<std::string, ast::Expr *> &kw, Avail &avail);
  /// cat and stack of a list of values along a dim (SemaShape.cpp).
  mlir::LogicalResult joinBuiltin(ast::CallExpr &e, ast::Builtin fn, std::vector<ast::Expr *> &pos,
                                  std::map<std::string, ast::Expr *> &kw, Avail &avail);
  /// The size a shape argument gives: an integer constant or a model dimension name.
  mlir::FailureOr<int64_t> shapeSize(ast::Expr &e);
  /// A dimension argument normalised against `rank` (`rank + 1` for unsqueeze).
  mlir::FailureOr<int64_t> dimIndex(ast::Expr &e, int64_t rank, const ValueType &x);
  mlir::FailureOr<bool> constantBool(ast::Expr &e, llvm::StringRef what);
  mlir::LogicalResult unary(ast::UnaryExpr &e, Avail &avail);
  mlir::LogicalResult binary(ast::BinaryExpr &e, Avail &avail);
  /// The type of `base[subscripts]`; evaluates index expressions.
  mlir::FailureOr<ValueType> indexType(const ValueType &base,
                                       std::vector<ast::Subscript> &subscripts, mlir::Location loc,
                                       Avail &avail);
  mlir::FailureOr<int64_t> constantInt(ast::Expr &e, llvm::StringRef what);
  /// The site `e` names, for cache patterns; `layer` replaces a `*` subscript.
  mlir::FailureOr<int> sitePattern(ast::Expr &e, std::optional<int64_t> layer, bool &wildcard);
  ValueType siteType(int site) const;
  std::string describe(const ast::Expr &e) const;

  // Names.
  Binding *lookup(llvm::StringRef name);
  mlir::LogicalResult bind(const std::string &name, const ValueType &type, mlir::Location loc,
                           const Avail &avail, bool poisoned = false);
  std::vector<std::string> visibleNames() const;
  bool isReserved(llvm::StringRef name) const;

  const schema::Architecture &arch;
  mlir::MLIRContext &context;
  std::vector<SaveInfo> &saves;
  AccessOrder order;
  std::map<std::string, ast::ParamDecl *> params;
  std::vector<Scope> scopes;
  StmtContext ctx;
  /// Save names of the current trace ("h", "h.<step>") with where they were first saved.
  std::map<std::string, mlir::Location> savedNames;
  /// The current trace's stop() calls outside run-time conditions: the invoke each ends (-1:
  /// every invoke) and where; for the warning that one ends the whole request.
  std::vector<std::pair<int, mlir::Location>> stops;
  /// Expressions already checked, with their availability: each is evaluated once.
  llvm::DenseMap<const ast::Expr *, Avail> checked;
};

} // namespace nnsc

#endif // NNSC_FRONTEND_CHECKER_H

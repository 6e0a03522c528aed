//===- Sema.cpp - checks of names, declarations and timing ------*- C++ -*-===//

#include "Checker.h"
#include "Suggest.h"
#include "Unroll.h"

#include "mlir/IR/Diagnostics.h"

#include <set>

using namespace mlir;

namespace nnsc {

LogicalResult checkProgram(ast::Program &program, const schema::Architecture &arch,
                           MLIRContext &context, std::vector<SaveInfo> &saves) {
  // Each error once: the copies of an unrolled loop body (and of a statement checked again,
  // e.g. per step set) share their source locations, so an error in the body would otherwise
  // be reported once per iteration. A diagnostic equal in location and text to an earlier
  // one is dropped here; the others go on to the handlers installed before.
  std::set<std::pair<std::string, std::string>> seen;
  ScopedDiagnosticHandler dedupe(&context, [&](Diagnostic &diag) {
    std::string where;
    llvm::raw_string_ostream os(where);
    diag.getLocation().print(os);
    return success(!seen.emplace(where, diag.str()).second);
  });
  return Checker(arch, context, saves).run(program);
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

Binding *Checker::lookup(StringRef name) {
  for (Scope &scope : llvm::reverse(scopes))
    if (auto it = scope.names.find(name.str()); it != scope.names.end())
      return &it->second;
  return nullptr;
}

bool Checker::isReserved(StringRef name) const {
  static const char *const kReserved[] = {"model", "logits", "samples", "result",
                                          "steps", "step",   "true",    "false"};
  return schema::Architecture::expandAlias(name) || llvm::is_contained(kReserved, name);
}

std::vector<std::string> Checker::visibleNames() const {
  std::vector<std::string> names = {"layers", "embed",   "norm",   "lm_head", "model",
                                    "logits", "samples", "result", "steps"};
  for (const Scope &scope : scopes)
    llvm::append_range(names, scope.order);
  for (const auto &[name, decl] : params)
    names.push_back(name);
  for (const auto &[name, size] : arch.dimensionNames())
    names.push_back(name);
  for (const char *f :
       {"sum",         "mean", "max",     "min",   "argmax", "argmin",     "softmax",
        "log_softmax", "exp",  "log",     "sqrt",  "abs",    "relu",       "gelu",
        "silu",        "tanh", "sigmoid", "clamp", "where",  "zeros_like", "ones_like",
        "topk",        "stop", "finish",  "cache"})
    names.push_back(f);
  return names;
}

LogicalResult Checker::bind(const std::string &name, const ValueType &type, Location loc,
                            const Avail &avail, bool poisoned) {
  Scope &scope = scopes.back();
  if (scope.kind == Scope::Kind::Steps || scope.kind == Scope::Kind::Branch) {
    // Rebinding a name from outside a steps loop would carry a value from one step to the
    // next; a loop body is the same code at every step and cannot.
    for (size_t i = scopes.size(); i-- > 0;) {
      if (!scopes[i].names.count(name))
        continue;
      bool crossesLoop = false;
      for (size_t j = i + 1; j < scopes.size(); ++j)
        crossesLoop |= scopes[j].kind == Scope::Kind::Steps;
      if (crossesLoop && !poisoned) {
        InFlightDiagnostic diag = emitError(loc)
                                  << "cannot rebind '" << name
                                  << "' inside a steps loop: it is bound outside, and the loop "
                                     "body runs once per step; use a new name";
        diag.attachNote(scopes[i].names.at(name).loc) << "'" << name << "' bound here";
        return failure();
      }
      break;
    }
  }
  auto [it, inserted] = scope.names.insert_or_assign(name, Binding{type, loc, avail});
  it->second.poisoned = poisoned;
  if (inserted)
    scope.order.push_back(name);
  return success();
}

//===----------------------------------------------------------------------===//
// Program, params, traces
//===----------------------------------------------------------------------===//

LogicalResult Checker::run(ast::Program &program) {
  bool ok = true;
  for (ast::ParamDecl &p : program.params) {
    if (auto [it, inserted] = params.emplace(p.name, &p); !inserted) {
      InFlightDiagnostic diag = emitError(p.loc) << "param '" << p.name << "' is declared twice";
      diag.attachNote(it->second->loc) << "first declared here";
      ok = false;
      continue;
    }
    ok &= succeeded(checkParam(p));
  }
  std::map<std::string, Location> traceNames;
  for (ast::TraceDecl &t : program.traces) {
    std::string name = t.name.empty() ? "main" : t.name;
    if (auto [it, inserted] = traceNames.emplace(name, t.loc); !inserted) {
      InFlightDiagnostic diag = emitError(t.loc)
                                << (t.name.empty() ? "a second unnamed trace; name them, as in "
                                                     "'trace capture { ... }'"
                                                   : "trace '" + name + "' is defined twice");
      diag.attachNote(it->second) << "first trace '" << name << "' here";
      ok = false;
      continue;
    }
    ok &= succeeded(checkTrace(t));
  }
  return success(ok);
}

LogicalResult Checker::checkParam(ast::ParamDecl &p) {
  if (isReserved(p.name)) {
    emitError(p.loc) << "'" << p.name << "' is a name of the language; choose another param name";
    return failure();
  }
  const ast::TypeExpr &t = p.type;
  if (t.elem == "f32")
    p.resolved.elem = ElemType::F32;
  else if (t.elem == "i64")
    p.resolved.elem = ElemType::I64;
  else if (t.elem == "bool")
    p.resolved.elem = ElemType::Bool;
  else {
    emitError(t.loc) << "unknown element type '" << t.elem << "'; expected f32, i64 or bool"
                     << didYouMean(t.elem, {"f32", "i64", "bool"});
    return failure();
  }
  std::map<std::string, int64_t> dimNames = arch.dimensionNames();
  for (const ast::TypeDim &d : t.dims) {
    if (d.size) {
      if (*d.size <= 0) {
        emitError(d.loc) << "dimension " << *d.size << " must be positive";
        return failure();
      }
      p.resolved.dims.push_back(*d.size);
      continue;
    }
    auto it = dimNames.find(d.name);
    if (it == dimNames.end()) {
      std::vector<std::string> names;
      for (auto &[n, v] : dimNames)
        names.push_back(n);
      emitError(d.loc) << "unknown model dimension '" << d.name << "'; expected a number or "
                       << "one of hidden, vocab, heads, kv_heads, head_dim, intermediate, layers"
                       << didYouMean(d.name, names);
      return failure();
    }
    p.resolved.dims.push_back(it->second);
  }
  if (!p.init)
    return success();
  Avail ignored;
  scopes.assign(1, Scope{Scope::Kind::Trace, {}, {}});
  if (failed(value(*p.init, ignored)))
    return failure();
  const ast::ExprSema &init = p.init->sema;
  bool constant = init.constant || init.constantFloat;
  if (!constant || !init.type.isScalar()) {
    emitError(p.init->loc()) << "the default of param '" << p.name
                             << "' must be a scalar constant (it fills the whole tensor)";
    return failure();
  }
  bool fits = p.resolved.elem == ElemType::F32 ? init.type.elem != ElemType::Bool
                                               : init.type.elem == p.resolved.elem;
  if (!fits) {
    emitError(p.init->loc()) << "the default of param '" << p.name << "' has type "
                             << init.type.str() << ", which does not fit " << p.resolved.str();
    return failure();
  }
  return success();
}

LogicalResult Checker::checkTrace(ast::TraceDecl &trace) {
  // Loop bounds are evaluated like any expression of the trace (model dimension names, integer
  // arithmetic, the variables of enclosing loops) before any of its names is bound.
  scopes.assign(1, Scope{Scope::Kind::Trace, {}, {}});
  ctx = StmtContext();
  // Unrolling destroys the loops whose bounds it evaluated, and a later copy may be allocated
  // where one of their expressions was: no entry of `checked` may outlive an evaluation.
  auto evaluate = [&](ast::Expr &e, StringRef what) {
    FailureOr<int64_t> v = constantInt(e, what);
    checked.clear();
    return v;
  };
  if (failed(unrollRangeLoops(trace.body, evaluate)))
    return failure();
  order.clear();
  savedNames.clear();
  stops.clear();
  checked.clear();
  ctx.trace = trace.name.empty() ? "main" : trace.name;
  ctx.traceHasInvokes = llvm::any_of(
      trace.body.stmts, [](const ast::StmtPtr &s) { return isa<ast::InvokeStmt>(s.get()); });
  if (!checkBlock(trace.body))
    return failure();
  warnRequestStops();
  return success();
}

void Checker::warnRequestStops() {
  if (ctx.numInvokes < 2)
    return; // one prompt: its stop() ending the request is what it says
  for (const auto &[invoke, loc] : stops)
    if (invoke < 0) {
      emitWarning(loc) << "stop() outside an invoke stops every invoke of trace '" << ctx.trace
                       << "': the whole request ends here; a stop() inside an invoke ends only "
                          "that invoke's prompt";
      return;
    }
  std::map<int, Location> firstStop;
  for (const auto &[invoke, loc] : stops)
    firstStop.emplace(invoke, loc);
  if (int(firstStop.size()) < ctx.numInvokes)
    return;
  const auto &[lastInvoke, lastLoc] = stops.back();
  InFlightDiagnostic diag = emitWarning(lastLoc)
                            << "every invoke of trace '" << ctx.trace
                            << "' calls stop(): the whole request ends once each has stopped";
  for (const auto &[invoke, loc] : firstStop)
    if (invoke != lastInvoke)
      diag.attachNote(loc) << "an earlier invoke stops here";
}

bool Checker::checkBlock(ast::Block &block) {
  bool ok = true;
  for (ast::StmtPtr &s : block.stmts)
    ok &= succeeded(checkStmt(*s));
  return ok;
}

LogicalResult Checker::checkStmt(ast::Stmt &stmt) {
  switch (stmt.getKind()) {
  case ast::Stmt::Kind::Assign:
    return checkAssign(cast<ast::AssignStmt>(stmt));
  case ast::Stmt::Kind::Expr:
    return checkExprStmt(cast<ast::ExprStmt>(stmt));
  case ast::Stmt::Kind::If:
    return checkIf(cast<ast::IfStmt>(stmt));
  case ast::Stmt::Kind::For:
    return checkFor(cast<ast::ForStmt>(stmt));
  case ast::Stmt::Kind::Invoke:
    return checkInvoke(cast<ast::InvokeStmt>(stmt));
  }
  return failure();
}

//===----------------------------------------------------------------------===//
// Saves, writes, timing
//===----------------------------------------------------------------------===//

LogicalResult Checker::recordSave(const std::string &name, const ValueType &type, Location loc,
                                  bool fromCache) {
  std::string key = name + (ctx.inSteps ? ".<step>" : "");
  if (auto [it, inserted] = savedNames.emplace(key, loc); !inserted) {
    InFlightDiagnostic diag = emitError(loc) << "'" << key << "' is saved twice in trace '"
                                             << ctx.trace << "'; use another name";
    diag.attachNote(it->second) << "first saved here";
    return failure();
  }
  saves.push_back({ctx.trace, name, type, ctx.inSteps, fromCache});
  return success();
}

LogicalResult Checker::checkWritable(int site, Location loc) {
  const schema::Site &s = arch.sites()[site];
  if (s.writable)
    return success();
  if (s.phase == schema::Phase::Result)
    emitError(loc) << "'result' is read-only: it holds the generated tokens once the request "
                      "is over";
  else
    emitError(loc) << "'" << s.path << "' is read-only: the token ids come from the prompt";
  return failure();
}

LogicalResult Checker::checkInTime(const Avail &avail, int site, Location loc) {
  for (const Dep &d : avail.deps) {
    if (d.invoke == ctx.invoke || (d.stepZero && !ctx.steps.contains(0)))
      continue;
    if (d.order > site) {
      InFlightDiagnostic diag =
          emitError(loc) << "a value from an earlier invoke is not available in time: it needs '"
                         << arch.sites()[d.order].path << "', but invoke '" << ctx.invokeName
                         << "' uses it at '" << arch.sites()[site].path
                         << "', which fires first (all prompts run in the same forward pass)";
      diag.attachNote(d.loc) << "'" << arch.sites()[d.order].path << "' read here";
      return failure();
    }
  }
  return success();
}

LogicalResult Checker::checkAssignable(ast::Expr &value, const ValueType &target,
                                       const std::string &what, Location loc) {
  const ValueType &v = value.sema.type;
  bool elemOk = v.elem == target.elem ||
                (target.elem == ElemType::F32 && v.elem != ElemType::F32) ||
                (target.elem == ElemType::I64 && v.elem == ElemType::Bool);
  auto shape = broadcast(v.dims, target.dims);
  if (!elemOk || !shape ||
      llvm::ArrayRef<int64_t>(*shape) != llvm::ArrayRef<int64_t>(target.dims)) {
    emitError(loc) << "shape mismatch: cannot write a value of type " << v.str() << " to " << what
                   << " of type " << target.str();
    return failure();
  }
  return success();
}

} // namespace nnsc

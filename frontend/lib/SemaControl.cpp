//===- SemaControl.cpp - semantic checks of if, for and invoke --*- C++ -*-===//

#include "Checker.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

using ast::Entity;

LogicalResult Checker::checkIf(ast::IfStmt &stmt) {
  Avail condAvail;
  if (failed(value(*stmt.cond, condAvail)))
    return failure();
  const ast::ExprSema &cond = stmt.cond->sema;
  if (cond.type.elem != ElemType::Bool || !cond.type.isScalar()) {
    emitError(stmt.cond->loc()) << "the condition must be a bool scalar; got " << cond.type.str()
                                << (cond.type.isScalar() ? "" : " (reduce it, e.g. with .max())");
    return failure();
  }
  if (cond.constant) {
    // Known at compile time (e.g. on an unrolled loop index): only the taken branch exists.
    stmt.sema.constant = *cond.constant != 0;
    if (*stmt.sema.constant)
      return success(checkBlock(stmt.thenBlock));
    return success(!stmt.elseBlock || checkBlock(*stmt.elseBlock));
  }
  StmtContext saved = ctx;
  ctx.inDeviceIf = true;
  ctx.control.merge(condAvail);
  bool ok = true;
  std::map<std::string, Binding> rebound;
  auto runBranch = [&](ast::Block &block) {
    scopes.push_back(Scope{Scope::Kind::Branch, {}, {}});
    ok &= checkBlock(block);
    Scope branch = std::move(scopes.back());
    scopes.pop_back();
    for (const std::string &name : branch.order) {
      Binding *outer = lookup(name);
      if (!outer)
        continue;
      const Binding &inner = branch.names.at(name);
      if (inner.poisoned || outer->poisoned)
        continue;
      if (!(inner.type == outer->type)) {
        InFlightDiagnostic diag = emitError(inner.loc)
                                  << "'" << name << "' has type " << outer->type.str()
                                  << " before the 'if' but " << inner.type.str()
                                  << " in this branch; a conditional rebinding keeps the type";
        diag.attachNote(outer->loc) << "'" << name << "' bound here";
        ok = false;
        continue;
      }
      auto [it, inserted] = rebound.emplace(name, inner);
      if (!inserted)
        it->second.avail.merge(inner.avail);
    }
  };
  size_t mark = order.checkpoint();
  runBranch(stmt.thenBlock);
  std::vector<AccessRecord> thenRecords = order.takeSince(mark);
  if (stmt.elseBlock)
    runBranch(*stmt.elseBlock);
  order.restore(std::move(thenRecords));
  ctx = saved;
  for (auto &[name, inner] : rebound) {
    Binding *outer = lookup(name);
    outer->avail.merge(inner.avail);
    outer->avail.merge(condAvail);
    stmt.sema.rebound.push_back(name);
  }
  return success(ok);
}

LogicalResult Checker::checkFor(ast::ForStmt &stmt) {
  ast::Expr &iter = *stmt.iter;
  auto isSteps = [&](ast::Expr &e) {
    auto *n = dyn_cast<ast::NameExpr>(&e);
    return n && n->name == "steps" && !lookup("steps");
  };
  ast::IndexExpr *slice = dyn_cast<ast::IndexExpr>(&iter);
  if (!isSteps(iter) && !(slice && isSteps(*slice->base))) {
    emitError(iter.loc()) << "a loop iterates 'steps' (generation steps, as in 'for step in "
                             "steps[0:5]') or an integer range (as in 'for i in 0..16')";
    return failure();
  }
  if (ctx.inSteps) {
    emitError(stmt.loc()) << "steps loops cannot be nested";
    return failure();
  }
  if (ctx.inDeviceIf) {
    emitError(stmt.loc()) << "a steps loop cannot be inside a run-time 'if'; put the 'if' "
                             "inside the loop";
    return failure();
  }
  iter.sema.entity = Entity::Steps;
  if (slice) {
    if (slice->subscripts.size() != 1 ||
        slice->subscripts[0].kind == ast::Subscript::Kind::Wildcard ||
        slice->subscripts[0].kind == ast::Subscript::Kind::NewAxis) {
      emitError(slice->loc()) << "select steps with one slice, as in 'steps[0:5]'";
      return failure();
    }
    ast::Subscript &sub = slice->subscripts[0];
    if (sub.kind == ast::Subscript::Kind::Index) {
      FailureOr<int64_t> step = constantInt(*sub.index, "a step index");
      if (failed(step))
        return failure();
      stmt.start = *step;
      stmt.stop = *step + 1;
    } else {
      ast::Expr *parts[3] = {sub.lo.get(), sub.hi.get(), sub.stride.get()};
      int64_t values[3] = {0, 0, 1};
      for (int i = 0; i < 3; ++i) {
        if (!parts[i])
          continue;
        FailureOr<int64_t> v = constantInt(*parts[i], "a steps slice bound");
        if (failed(v))
          return failure();
        values[i] = *v;
      }
      stmt.start = values[0];
      stmt.stop = parts[1] ? std::optional<int64_t>(values[1]) : std::nullopt;
      stmt.stride = values[2];
    }
    if (stmt.start < 0 || (stmt.stop && *stmt.stop < 0)) {
      emitError(sub.loc) << "steps are counted from 0 (the prompt); negative steps are not "
                            "known in advance";
      return failure();
    }
    if (stmt.stride < 1 || (stmt.stop && *stmt.stop <= stmt.start)) {
      emitError(sub.loc) << "the steps slice selects no step";
      return failure();
    }
  }
  StmtContext saved = ctx;
  ctx.inSteps = true;
  ctx.steps = StepSet{stmt.start, stmt.stop, stmt.stride};
  scopes.push_back(Scope{Scope::Kind::Steps, {}, {}});
  Binding stepBinding{ValueType{ElemType::I64, {}}, stmt.varLoc, {}};
  stepBinding.source = ast::NameSource::Step;
  scopes.back().names.emplace(stmt.var, stepBinding);
  bool ok = checkBlock(stmt.body);
  scopes.pop_back();
  ctx = saved;
  return success(ok);
}

LogicalResult Checker::checkInvoke(ast::InvokeStmt &stmt) {
  if (scopes.size() != 1 || ctx.inInvoke) {
    emitError(stmt.loc()) << "invoke blocks must be at the top level of a trace";
    return failure();
  }
  int index = ctx.numInvokes++;
  stmt.sema.index = index;
  if (stmt.name.empty())
    stmt.name = "invoke" + std::to_string(index);
  if (auto [it, inserted] = ctx.invokeNames.emplace(stmt.name, stmt.loc()); !inserted) {
    InFlightDiagnostic diag = emitError(stmt.loc())
                              << "invoke '" << stmt.name << "' is defined twice in this trace";
    diag.attachNote(it->second) << "first invoke '" << stmt.name << "' here";
    return failure();
  }
  ctx.inInvoke = true;
  ctx.invoke = index;
  ctx.invokeName = stmt.name;
  scopes.push_back(Scope{Scope::Kind::Invoke, {}, {}});
  bool ok = checkBlock(stmt.body);
  Scope scope = std::move(scopes.back());
  scopes.pop_back();
  ctx.inInvoke = false;
  ctx.invoke = 0;
  for (const std::string &name : scope.order) {
    const Binding &b = scope.names.at(name);
    stmt.sema.exports.push_back(name);
    (void)bind(name, b.type, b.loc, b.avail, b.poisoned);
  }
  return success(ok);
}

} // namespace nnsc

//===- SemaStmt.cpp - semantic checks of statements -------------*- C++ -*-===//

#include "Checker.h"
#include "Suggest.h"
#include "ViewChain.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;
using ast::Entity;

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult Checker::checkAssign(ast::AssignStmt &stmt) {
  ast::Expr &target = *stmt.target;
  if (auto *n = dyn_cast<ast::NameExpr>(&target)) {
    Binding *existing = lookup(n->name);
    bool isStep = existing && existing->source == ast::NameSource::Step;
    if (!existing && (params.count(n->name) || isReserved(n->name) || n->name == "step")) {
      // `logits = ...` and `samples = ...` are site writes.
      if (n->name == "logits" || n->name == "samples" || n->name == "result")
        return checkSiteAssign(stmt, target, nullptr);
      emitError(n->loc()) << "cannot assign to '" << n->name << "': it is "
                          << (params.count(n->name) ? "a param" : "a name of the language");
      return failure();
    }
    if (isStep) {
      emitError(n->loc()) << "cannot assign to the step index '" << n->name << "'";
      return failure();
    }
    Avail avail = ctx.control;
    ast::Expr *rhs = stmt.value.get();
    auto *call = dyn_cast<ast::CallExpr>(rhs);
    auto *saveCallee = call ? dyn_cast<ast::MemberExpr>(call->callee.get()) : nullptr;
    bool isSave = saveCallee && saveCallee->member == "save";
    if (isSave) {
      if (!call->args.empty()) {
        emitError(call->loc()) << "'.save()' takes no arguments; the name is the binding's";
        return failure();
      }
      if (stmt.op != ast::AssignOp::Set) {
        emitError(call->loc()) << "'.save()' needs a plain binding 'x = EXPR.save()'";
        return failure();
      }
      rhs = saveCallee->base.get();
    }
    if (failed(value(*rhs, avail))) {
      (void)bind(n->name, {}, n->loc(), avail, /*poisoned=*/true);
      return failure();
    }
    ValueType type = rhs->sema.type;
    if (stmt.op != ast::AssignOp::Set) {
      if (!existing || existing->poisoned) {
        if (!existing)
          emitError(n->loc()) << "unknown name '" << n->name << "'"
                              << didYouMean(n->name, visibleNames());
        return failure();
      }
      auto shape = broadcast(existing->type.dims, type.dims);
      if (!shape || existing->type.elem == ElemType::Bool || type.elem == ElemType::Bool) {
        emitError(stmt.loc()) << "shape mismatch: cannot update '" << n->name << "' of type "
                              << existing->type.str() << " with " << type.str();
        return failure();
      }
      avail.merge(existing->avail);
      ElemType elem =
          stmt.op == ast::AssignOp::Div ? ElemType::F32 : promote(existing->type.elem, type.elem);
      type = {elem, *shape};
      n->sema.type = existing->type;
    }
    if (isSave) {
      call->sema.entity = Entity::Value;
      call->sema.builtin = Builtin::Save;
      call->sema.type = type;
      call->sema.saveName = n->name + stmt.unrollSuffix;
      if (failed(recordSave(call->sema.saveName, type, call->loc(), false)))
        return failure();
    }
    n->sema.entity = Entity::Value;
    n->sema.source = ast::NameSource::Local;
    return bind(n->name, type, n->loc(), avail);
  }
  {
    auto *ix = dyn_cast<ast::IndexExpr>(&target);
    ast::Expr &viewed = ix ? *ix->base : target;
    if (std::optional<ViewChain> chain = viewChain(viewed)) {
      Avail ignored;
      if (failed(expr(*chain->base, ignored)))
        return failure();
      if (chain->base->sema.entity != Entity::Site) {
        emitError(target.loc()) << "cannot assign through a view of a " << describe(*chain->base)
                                << "; writes through a view apply to sites, as in "
                                   "'o_proj.input.view(-1, heads, head_dim)[:, 3] = 0'";
        return failure();
      }
      return checkSiteAssign(stmt, *chain->base, ix ? &ix->subscripts : nullptr, &viewed);
    }
  }
  if (auto *ix = dyn_cast<ast::IndexExpr>(&target)) {
    Avail ignored;
    if (failed(expr(*ix->base, ignored)))
      return failure();
    if (ix->base->sema.entity == Entity::Site)
      return checkSiteAssign(stmt, *ix->base, &ix->subscripts);
    if (ix->base->sema.entity == Entity::Value && isa<ast::NameExpr>(*ix->base) &&
        ix->base->sema.source == ast::NameSource::Local)
      return checkLocalIndexAssign(stmt, *ix);
  } else {
    Avail ignored;
    if (failed(expr(target, ignored)))
      return failure();
    if (target.sema.entity == Entity::Site)
      return checkSiteAssign(stmt, target, nullptr);
  }
  emitError(target.loc()) << "cannot assign to this expression; assign to a site, as in "
                             "'layers[3].output = ...', or to a name";
  return failure();
}

LogicalResult Checker::checkSiteAssign(ast::AssignStmt &stmt, ast::Expr &siteExpr,
                                       std::vector<ast::Subscript> *subscripts, ast::Expr *view) {
  Avail ignored;
  if (failed(expr(siteExpr, ignored)))
    return failure();
  int site = siteExpr.sema.site;
  const schema::Site &s = arch.sites()[site];
  if (failed(checkWritable(site, stmt.target->loc())))
    return failure();
  if (ctx.traceHasInvokes && !ctx.inInvoke) {
    emitError(stmt.target->loc()) << "in a trace with invoke blocks every site access belongs "
                                     "to an invoke; move this write of '"
                                  << s.path << "' into one";
    return failure();
  }
  Avail avail = ctx.control;
  if (failed(value(*stmt.value, avail)))
    return failure();
  ValueType slot = siteType(site);
  if (view) {
    // The view reads the site; the write replaces all of it.
    if (failed(value(*view, avail)))
      return failure();
    slot = view->sema.type;
  }
  if (subscripts) {
    FailureOr<ValueType> t = indexType(slot, *subscripts, stmt.target->loc(), avail);
    if (failed(t))
      return failure();
    slot = *t;
  }
  if (failed(checkInTime(avail, site, stmt.value->loc())))
    return failure();
  if (stmt.op != ast::AssignOp::Set &&
      (slot.elem != ElemType::F32 || stmt.value->sema.type.elem == ElemType::Bool)) {
    emitError(stmt.loc()) << "in-place update of '" << s.path << "' of type " << slot.str()
                          << " with " << stmt.value->sema.type.str()
                          << "; only f32 sites can be updated with numbers";
    return failure();
  }
  std::string what =
      "'" + s.path + "'" + (view ? " (viewed)" : "") + (subscripts ? " (indexed)" : "");
  if (failed(checkAssignable(*stmt.value, slot, what, stmt.value->loc())))
    return failure();
  if (failed(order.access(site, ctx.steps, ctx.invoke, stmt.target->loc())))
    return failure();
  siteExpr.sema.type = siteType(site);
  stmt.target->sema.type = slot;
  return success();
}

LogicalResult Checker::checkLocalIndexAssign(ast::AssignStmt &stmt, ast::IndexExpr &target) {
  auto &n = cast<ast::NameExpr>(*target.base);
  Binding *b = lookup(n.name);
  Avail avail = b->avail;
  avail.merge(ctx.control);
  FailureOr<ValueType> slot = indexType(b->type, target.subscripts, target.loc(), avail);
  if (failed(slot) || failed(value(*stmt.value, avail)))
    return failure();
  if (stmt.op != ast::AssignOp::Set &&
      (slot->elem == ElemType::Bool || stmt.value->sema.type.elem == ElemType::Bool)) {
    emitError(stmt.loc()) << "in-place update of a bool value";
    return failure();
  }
  if (failed(checkAssignable(*stmt.value, *slot, "'" + n.name + "' (indexed)", stmt.value->loc())))
    return failure();
  target.sema.type = *slot;
  return bind(n.name, b->type, n.loc(), avail);
}

LogicalResult Checker::checkExprStmt(ast::ExprStmt &stmt) {
  auto *call = dyn_cast<ast::CallExpr>(stmt.expr.get());
  if (call) {
    if (auto *m = dyn_cast<ast::MemberExpr>(call->callee.get())) {
      if (m->member == "save") {
        emitError(call->loc()) << "'.save()' needs a name: bind it, as in 'x = EXPR.save()'";
        return failure();
      }
      if (m->member == "skip")
        return checkSkip(*call);
    }
    if (auto *n = dyn_cast<ast::NameExpr>(call->callee.get()); n && !lookup(n->name)) {
      if (n->name == "cache")
        return checkCache(*call);
      if (n->name == "stop" || n->name == "finish") {
        if (!call->args.empty()) {
          emitError(call->loc()) << "'" << n->name << "()' takes no arguments";
          return failure();
        }
        call->sema.entity = Entity::Function;
        call->sema.builtin = n->name == "stop" ? Builtin::Stop : Builtin::Finish;
        if (n->name == "stop") {
          const int invoke = ctx.inInvoke ? ctx.invoke : -1;
          order.stop(ctx.steps, invoke, call->loc());
          if (!ctx.inDeviceIf)
            stops.emplace_back(invoke, call->loc());
        }
        return success();
      }
    }
  }
  Avail ignored;
  if (failed(value(*stmt.expr, ignored)))
    return failure();
  emitError(stmt.loc()) << "this expression has no effect; bind it ('x = ...') or save it "
                           "('x = ....save()')";
  return failure();
}

LogicalResult Checker::checkSkip(ast::CallExpr &call) {
  Avail avail = ctx.control;
  if (failed(expr(*call.callee, avail)))
    return failure();
  if (call.callee->sema.entity != Entity::Method || call.callee->sema.builtin != Builtin::Skip) {
    emitError(call.loc()) << "'.skip(...)' applies to a module, as in 'layers[7].skip(h)'";
    return failure();
  }
  const schema::Module &m = arch.modules()[call.callee->sema.module];
  if (m.inputSite < 0 || m.outputSite < 0) {
    emitError(call.loc()) << "module '" << m.path << "' has no sites and cannot be skipped";
    return failure();
  }
  if (call.args.size() != 1 || !call.args[0].keyword.empty()) {
    emitError(call.loc()) << "'.skip(...)' takes the value the module's output becomes";
    return failure();
  }
  if (ctx.traceHasInvokes && !ctx.inInvoke) {
    emitError(call.loc()) << "in a trace with invoke blocks every site access belongs to an "
                             "invoke; move this '.skip()' into one";
    return failure();
  }
  ast::Expr &v = *call.args[0].value;
  if (failed(value(v, avail)) || failed(checkInTime(avail, m.inputSite, v.loc())))
    return failure();
  ValueType out = siteType(m.outputSite);
  if (failed(checkAssignable(v, out, "the output of '" + m.path + "'", v.loc())))
    return failure();
  if (failed(order.skip(call.callee->sema.module, ctx.steps, ctx.invoke, call.loc())))
    return failure();
  call.sema.entity = Entity::Function;
  call.sema.builtin = Builtin::Skip;
  call.sema.module = call.callee->sema.module;
  call.sema.type = out;
  return success();
}

LogicalResult Checker::checkCache(ast::CallExpr &call) {
  if (call.args.empty()) {
    emitError(call.loc()) << "cache(...) needs at least one site, as in 'cache(layers[*].output)'";
    return failure();
  }
  std::vector<int> sites;
  for (ast::Arg &arg : call.args) {
    if (!arg.keyword.empty()) {
      emitError(arg.loc) << "cache(...) takes site paths, not keyword arguments";
      return failure();
    }
    bool wildcard = false;
    FailureOr<int> site = sitePattern(*arg.value, std::nullopt, wildcard);
    if (failed(site))
      return failure();
    if (*site < 0) {
      emitError(arg.loc) << "cache(...) takes sites; add '.output' or '.input'";
      return failure();
    }
    if (!wildcard) {
      sites.push_back(*site);
      continue;
    }
    for (int64_t layer = 0; layer < arch.config().layers; ++layer) {
      bool ignored = false;
      sites.push_back(*sitePattern(*arg.value, layer, ignored));
    }
  }
  llvm::sort(sites);
  sites.erase(std::unique(sites.begin(), sites.end()), sites.end());
  if (ctx.traceHasInvokes && !ctx.inInvoke) {
    emitError(call.loc()) << "in a trace with invoke blocks every site access belongs to an "
                             "invoke; move this cache(...) into one";
    return failure();
  }
  for (int site : sites) {
    if (arch.sites()[site].phase == schema::Phase::Result && ctx.inSteps) {
      emitError(call.loc()) << "'result' is only available once the request finishes; cache "
                               "it outside 'for step in steps'";
      return failure();
    }
    if (failed(order.cache(site, ctx.steps, ctx.invoke, call.loc())) ||
        failed(recordSave(arch.sites()[site].path, siteType(site), call.loc(), true)))
      return failure();
  }
  call.sema.entity = Entity::Function;
  call.sema.builtin = Builtin::Cache;
  call.sema.cacheSites = std::move(sites);
  return success();
}

} // namespace nnsc

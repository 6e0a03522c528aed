//===- Sema.cpp - semantic checks of declarations and statements -*- C++ -*-===//

#include "Checker.h"
#include "Suggest.h"
#include "Unroll.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;
using ast::Entity;

LogicalResult checkProgram(ast::Program &program, const schema::Architecture &arch,
                           MLIRContext &context, std::vector<SaveInfo> &saves) {
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
  if (failed(unrollRangeLoops(trace.body)))
    return failure();
  order.clear();
  savedNames.clear();
  checked.clear();
  scopes.assign(1, Scope{Scope::Kind::Trace, {}, {}});
  ctx = StmtContext();
  ctx.trace = trace.name.empty() ? "main" : trace.name;
  ctx.traceHasInvokes = llvm::any_of(
      trace.body.stmts, [](const ast::StmtPtr &s) { return isa<ast::InvokeStmt>(s.get()); });
  return success(checkBlock(trace.body));
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
                                       std::vector<ast::Subscript> *subscripts) {
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
  std::string what = "'" + s.path + "'" + (subscripts ? " (indexed)" : "");
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
        if (n->name == "stop")
          order.stop(ctx.steps, call->loc());
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
        slice->subscripts[0].kind == ast::Subscript::Kind::Wildcard) {
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

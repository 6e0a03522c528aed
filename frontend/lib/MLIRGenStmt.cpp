//===- MLIRGenStmt.cpp - statements, if, steps loops and invokes ----------===//

#include "MLIRGenerator.h"
#include "ViewChain.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace nnsc::mlirgen {

void Generator::block(const ast::Block &b) {
  for (const ast::StmtPtr &s : b.stmts)
    stmt(*s);
}

void Generator::stmt(const ast::Stmt &s) {
  switch (s.getKind()) {
  case ast::Stmt::Kind::Assign:
    return assign(llvm::cast<ast::AssignStmt>(s));
  case ast::Stmt::Kind::Expr:
    return exprStmt(llvm::cast<ast::ExprStmt>(s));
  case ast::Stmt::Kind::If:
    return ifStmt(llvm::cast<ast::IfStmt>(s));
  case ast::Stmt::Kind::For:
    return forStmt(llvm::cast<ast::ForStmt>(s));
  case ast::Stmt::Kind::Invoke:
    return invoke(llvm::cast<ast::InvokeStmt>(s));
  }
}

nns::BinaryKind Generator::binaryKindOf(ast::AssignOp op) {
  switch (op) {
  case ast::AssignOp::Add:
    return nns::BinaryKind::Add;
  case ast::AssignOp::Sub:
    return nns::BinaryKind::Sub;
  case ast::AssignOp::Mul:
    return nns::BinaryKind::Mul;
  default:
    return nns::BinaryKind::Div;
  }
}

void Generator::assign(const ast::AssignStmt &a) {
  Location loc = a.loc();
  const ast::Expr &target = *a.target;
  if (auto *n = dyn_cast<ast::NameExpr>(&target); n && n->sema.site < 0) {
    Value v;
    auto *call = dyn_cast<ast::CallExpr>(a.value.get());
    if (call && call->sema.builtin == Builtin::Save && !call->sema.saveName.empty()) {
      v = expr(*llvm::cast<ast::MemberExpr>(*call->callee).base);
      nns::SaveOp::create(builder, call->loc(), call->sema.saveName, v);
    } else {
      v = expr(*a.value);
    }
    if (a.op != ast::AssignOp::Set) {
      Value old = lookup(n->name);
      Type elem = a.op == ast::AssignOp::Div
                      ? builder.getF32Type()
                      : elemType(promote(n->sema.type.elem, ElemType(a.value->sema.type.elem)));
      v = binaryOp(loc, binaryKindOf(a.op), old, v, elem);
    }
    bind(n->name, v);
    return;
  }
  const ast::Expr *siteExpr = &target;
  const std::vector<ast::Subscript> *subs = nullptr;
  if (auto *ix = dyn_cast<ast::IndexExpr>(&target)) {
    siteExpr = ix->base.get();
    subs = &ix->subscripts;
  }
  if (std::optional<ViewChain> chain = viewChain(const_cast<ast::Expr &>(*siteExpr)))
    return assignThroughView(a, *chain, subs);
  if (siteExpr->sema.site < 0) {
    // x[i] = v on a local: rebind x to the scattered value.
    auto &n = llvm::cast<ast::NameExpr>(*siteExpr);
    Value old = lookup(n.name);
    Value v = expr(*a.value);
    SmallVector<Value> indices = subscriptValues(*subs);
    v = updated(
        loc, a.op, [&] { return extract(old, *subs, indices, 0, 0); }, v);
    bind(n.name,
         scatter(loc, old, *subs, indices, 0, 0, castTo(loc, v, typeOf(old).getElementType())));
    return;
  }
  int i = siteExpr->sema.site;
  RankedTensorType siteType = tensorType(siteExpr->sema.type);
  Value v = expr(*a.value);
  StringAttr path = builder.getStringAttr(site(i).path);
  IntegerAttr order = builder.getI64IntegerAttr(i);
  if (!subs) {
    v = castTo(loc, v, siteType.getElementType());
    if (a.op == ast::AssignOp::Set) {
      nns::SiteWriteOp::create(builder, loc, v, path, order, phaseAttr(i), TypeAttr::get(siteType));
      return;
    }
    nns::UpdateKind kind = a.op == ast::AssignOp::Add   ? nns::UpdateKind::Add
                           : a.op == ast::AssignOp::Sub ? nns::UpdateKind::Sub
                           : a.op == ast::AssignOp::Mul ? nns::UpdateKind::Mul
                                                        : nns::UpdateKind::Div;
    nns::SiteUpdateOp::create(builder, loc, nns::UpdateKindAttr::get(builder.getContext(), kind), v,
                              path, order, phaseAttr(i), TypeAttr::get(siteType));
    return;
  }
  // SITE[IDX] op= v: read, update the part, scatter it back, write the whole.
  Value old = readSite(loc, i, siteType);
  SmallVector<Value> indices = subscriptValues(*subs);
  v = updated(
      loc, a.op, [&] { return extract(old, *subs, indices, 0, 0); }, v);
  Value full = scatter(loc, old, *subs, indices, 0, 0, castTo(loc, v, siteType.getElementType()));
  nns::SiteWriteOp::create(builder, loc, full, path, order, phaseAttr(i), TypeAttr::get(siteType));
}

void Generator::assignThroughView(const ast::AssignStmt &a, const ViewChain &chain,
                                  const std::vector<ast::Subscript> *subs) {
  Location loc = a.loc();
  int i = chain.base->sema.site;
  RankedTensorType siteType = tensorType(chain.base->sema.type);
  Value v = expr(*a.value);
  // Forwards: the site's value through each view, innermost first.
  SmallVector<Value> stages{readSite(loc, i, siteType)};
  for (ast::Expr *step : llvm::reverse(chain.steps)) {
    const ast::ExprSema &s = step->sema;
    stages.push_back(s.builtin == Builtin::Transpose
                         ? Value(nns::TransposeOp::create(builder, step->loc(), tensorType(s.type),
                                                          stages.back(), uint64_t(s.intArg),
                                                          uint64_t(s.intArg2)))
                         : reshape(step->loc(), stages.back(), tensorType(s.type)));
  }
  Value viewed = stages.back();
  Type elem = siteType.getElementType();
  Value full;
  if (subs) {
    SmallVector<Value> indices = subscriptValues(*subs);
    v = updated(
        loc, a.op, [&] { return extract(viewed, *subs, indices, 0, 0); }, v);
    full = scatter(loc, viewed, *subs, indices, 0, 0, castTo(loc, v, elem));
  } else {
    v = castTo(loc,
               updated(
                   loc, a.op, [&] { return viewed; }, v),
               elem);
    full = nns::BroadcastOp::create(builder, loc, typeOf(viewed), v, viewed);
  }
  // Backwards: undo each view, outermost first (a transpose is its own inverse).
  for (size_t k = chain.steps.size(); k-- > 0;) {
    const ast::Expr *step = chain.steps[chain.steps.size() - 1 - k];
    full = step->sema.builtin == Builtin::Transpose
               ? Value(nns::TransposeOp::create(builder, step->loc(), typeOf(stages[k]), full,
                                                uint64_t(step->sema.intArg),
                                                uint64_t(step->sema.intArg2)))
               : reshape(step->loc(), full, typeOf(stages[k]));
  }
  nns::SiteWriteOp::create(builder, loc, full, builder.getStringAttr(site(i).path),
                           builder.getI64IntegerAttr(i), phaseAttr(i), TypeAttr::get(siteType));
}

Value Generator::updated(Location loc, ast::AssignOp op, llvm::function_ref<Value()> part,
                         Value v) {
  if (op == ast::AssignOp::Set)
    return v;
  Value old = part();
  Type elem = op == ast::AssignOp::Div ? builder.getF32Type() : typeOf(old).getElementType();
  return binaryOp(loc, binaryKindOf(op), old, v, elem);
}

void Generator::exprStmt(const ast::ExprStmt &s) {
  auto &call = llvm::cast<ast::CallExpr>(*s.expr);
  Location loc = call.loc();
  switch (call.sema.builtin) {
  case Builtin::Stop:
    nns::StopOp::create(builder, loc);
    return;
  case Builtin::Finish:
    nns::FinishOp::create(builder, loc);
    return;
  case Builtin::Cache:
    for (int i : call.sema.cacheSites) {
      ValueType t;
      t.elem = site(i).elementType == schema::ElementType::F32 ? ElemType::F32 : ElemType::I64;
      t.dims.assign(site(i).shape.begin(), site(i).shape.end());
      nns::CacheOp::create(builder, loc, builder.getStringAttr(site(i).path),
                           builder.getI64IntegerAttr(i), phaseAttr(i),
                           TypeAttr::get(tensorType(t)));
    }
    return;
  case Builtin::Skip: {
    const schema::Module &m = arch.modules()[call.sema.module];
    RankedTensorType out = tensorType(call.sema.type);
    Value v = castTo(loc, expr(*call.args[0].value), out.getElementType());
    nns::SkipOp::create(builder, loc, m.path, m.inputSite, m.outputSite, v, out);
    return;
  }
  default:
    break;
  }
  llvm_unreachable("expression statement Sema does not accept");
}

void Generator::ifStmt(const ast::IfStmt &s) {
  if (s.sema.constant) {
    if (*s.sema.constant)
      block(s.thenBlock);
    else if (s.elseBlock)
      block(*s.elseBlock);
    return;
  }
  Value cond = expr(*s.cond);
  SmallVector<Type> types;
  for (const std::string &name : s.sema.rebound)
    types.push_back(lookup(name).getType());
  auto op = nns::IfOp::create(builder, s.loc(), types, cond);
  auto branch = [&](Region &region, const ast::Block *body) {
    OpBuilder::InsertionGuard guard(builder);
    builder.createBlock(&region);
    scopes.emplace_back();
    if (body)
      block(*body);
    SmallVector<Value> values;
    for (const std::string &name : s.sema.rebound)
      values.push_back(lookup(name));
    nns::YieldOp::create(builder, body ? body->loc : s.loc(), values);
    scopes.pop_back();
  };
  branch(op.getThenRegion(), &s.thenBlock);
  if (s.elseBlock || !types.empty())
    branch(op.getElseRegion(), s.elseBlock ? &*s.elseBlock : nullptr);
  for (auto [name, result] : llvm::zip(s.sema.rebound, op.getResults()))
    rebind(name, result);
}

void Generator::forStmt(const ast::ForStmt &s) {
  IntegerAttr stop = s.stop ? builder.getI64IntegerAttr(*s.stop) : IntegerAttr();
  auto op = nns::StepsOp::create(builder, s.loc(), builder.getI64IntegerAttr(s.start), stop,
                                 builder.getI64IntegerAttr(s.stride));
  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&op.getBody());
  Value step = body->addArgument(RankedTensorType::get({}, builder.getI64Type()), s.varLoc);
  scopes.emplace_back();
  bind(s.var, step);
  block(s.body);
  nns::YieldOp::create(builder, s.body.loc);
  scopes.pop_back();
}

void Generator::invoke(const ast::InvokeStmt &s) {
  // The results are the exported names, whose types are known once the body is built: build
  // it in a detached block first.
  auto body = std::make_unique<Block>();
  SmallVector<Value> exports;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body.get());
    scopes.emplace_back();
    block(s.body);
    for (const std::string &name : s.sema.exports)
      exports.push_back(lookup(name));
    nns::YieldOp::create(builder, s.body.loc, exports);
    scopes.pop_back();
  }
  SmallVector<Type> types;
  for (Value v : exports)
    types.push_back(v.getType());
  auto op = nns::InvokeOp::create(builder, s.loc(), types, s.name, s.sema.index);
  op.getBody().push_back(body.release());
  for (auto [name, result] : llvm::zip(s.sema.exports, op.getResults()))
    bind(name, result);
}

} // namespace nnsc::mlirgen

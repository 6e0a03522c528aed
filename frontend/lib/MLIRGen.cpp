//===- MLIRGen.cpp - nns IR from a checked AST ------------------*- C++ -*-===//
//
// A direct walk over the annotated AST: Sema already resolved every path, type and constant,
// so each node maps to a few ops. Site ops carry the site's path, firing order and phase.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Frontend/MLIRGen.h"

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>

using namespace mlir;

namespace nnsc {
namespace {

using ast::Builtin;

nns::Phase phaseOf(schema::Phase p) {
  switch (p) {
  case schema::Phase::Forward:
    return nns::Phase::Forward;
  case schema::Phase::Logits:
    return nns::Phase::Logits;
  case schema::Phase::Samples:
    return nns::Phase::Samples;
  case schema::Phase::Result:
    return nns::Phase::Result;
  }
  return nns::Phase::Forward;
}

class Generator {
public:
  Generator(const schema::Architecture &arch, MLIRContext &context)
      : arch(arch), builder(&context) {}

  OwningOpRef<ModuleOp> program(const ast::Program &p) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    for (const ast::ParamDecl &param : p.params)
      paramDecl(param);
    for (const ast::TraceDecl &t : p.traces) {
      auto trace = nns::TraceOp::create(builder, t.loc, t.name.empty() ? "main" : t.name);
      OpBuilder::InsertionGuard guard(builder);
      builder.createBlock(&trace.getBody());
      scopes.assign(1, {});
      block(t.body);
    }
    return module;
  }

private:
  Type elemType(ElemType e) {
    switch (e) {
    case ElemType::F32:
      return builder.getF32Type();
    case ElemType::I64:
      return builder.getI64Type();
    case ElemType::Bool:
      return builder.getI1Type();
    }
    return {};
  }
  RankedTensorType tensorType(const ValueType &t) {
    SmallVector<int64_t> shape;
    for (int64_t d : t.dims)
      shape.push_back(isTokenDim(d) ? ShapedType::kDynamic : d);
    return RankedTensorType::get(shape, elemType(t.elem));
  }
  RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }
  RankedTensorType withElem(RankedTensorType t, Type elem) {
    return RankedTensorType::get(t.getShape(), elem);
  }

  Value constant(Location loc, ElemType elem, double value) {
    auto type = RankedTensorType::get({}, elemType(elem));
    Attribute attr;
    if (elem == ElemType::F32)
      attr = DenseElementsAttr::get(type, builder.getF32FloatAttr(float(value)));
    else
      attr = DenseElementsAttr::get(type, builder.getIntegerAttr(elemType(elem), int64_t(value)));
    return arith::ConstantOp::create(builder, loc, llvm::cast<TypedAttr>(attr));
  }
  Value castTo(Location loc, Value v, Type elem) {
    RankedTensorType t = typeOf(v);
    if (t.getElementType() == elem)
      return v;
    // A literal converts at compile time: `h = 0` on an f32 site writes 0.0.
    if (auto cst = v.getDefiningOp<arith::ConstantOp>(); cst && t.getRank() == 0) {
      auto value = llvm::cast<DenseElementsAttr>(cst.getValue());
      double d = value.getElementType().isF32()
                     ? value.getSplatValue<APFloat>().convertToDouble()
                     : double(value.getSplatValue<APInt>().getSExtValue());
      return constant(loc,
                      elem.isF32()        ? ElemType::F32
                      : elem.isInteger(1) ? ElemType::Bool
                                          : ElemType::I64,
                      d);
    }
    return nns::CastOp::create(builder, loc, withElem(t, elem), v);
  }

  void paramDecl(const ast::ParamDecl &p) {
    RankedTensorType type = tensorType(p.resolved);
    ElementsAttr init;
    if (p.init) {
      const ast::ExprSema &s = p.init->sema;
      double v = s.constantFloat ? *s.constantFloat : double(*s.constant);
      if (p.resolved.elem == ElemType::F32)
        init = DenseElementsAttr::get(type, builder.getF32FloatAttr(float(v)));
      else
        init =
            DenseElementsAttr::get(type, builder.getIntegerAttr(type.getElementType(), int64_t(v)));
    }
    paramTypes[p.name] = type;
    nns::ParamOp::create(builder, p.loc, p.name, type, init);
  }

  // Scopes mirror Sema's: a lookup walks outwards.
  Value lookup(const std::string &name) {
    for (auto &scope : llvm::reverse(scopes))
      if (auto it = scope.find(name); it != scope.end())
        return it->second;
    return {};
  }
  void bind(const std::string &name, Value v) { scopes.back()[name] = v; }
  /// Rebinds an existing name in the scope that holds it (for if-results).
  void rebind(const std::string &name, Value v) {
    for (auto &scope : llvm::reverse(scopes))
      if (auto it = scope.find(name); it != scope.end()) {
        it->second = v;
        return;
      }
    bind(name, v);
  }

  //===--------------------------------------------------------------------===//
  // Sites
  //===--------------------------------------------------------------------===//

  const schema::Site &site(int i) { return arch.sites()[i]; }
  nns::PhaseAttr phaseAttr(int i) {
    return nns::PhaseAttr::get(builder.getContext(), phaseOf(site(i).phase));
  }
  Value readSite(Location loc, int i, RankedTensorType type) {
    return nns::SiteReadOp::create(builder, loc, type, builder.getStringAttr(site(i).path),
                                   builder.getI64IntegerAttr(i), phaseAttr(i));
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  Value expr(const ast::Expr &e) {
    const ast::ExprSema &s = e.sema;
    Location loc = e.loc();
    if (s.site >= 0 && (isa<ast::NameExpr>(e) || isa<ast::MemberExpr>(e)))
      return readSite(loc, s.site, tensorType(s.type));
    // Sema folded literal arithmetic (`-1`, `i + 1` in unrolled loops).
    if (s.constant && e.getKind() != ast::Expr::Kind::Name)
      return constant(loc, s.type.elem, double(*s.constant));
    if (s.constantFloat)
      return constant(loc, s.type.elem, *s.constantFloat);
    switch (e.getKind()) {
    case ast::Expr::Kind::Name: {
      auto &n = llvm::cast<ast::NameExpr>(e);
      if (s.source == ast::NameSource::Param)
        return nns::GetParamOp::create(builder, loc, paramTypes.at(n.name), n.name);
      return lookup(n.name);
    }
    case ast::Expr::Kind::IntLit:
      return constant(loc, ElemType::I64, double(llvm::cast<ast::IntLitExpr>(e).value));
    case ast::Expr::Kind::FloatLit:
      return constant(loc, ElemType::F32, llvm::cast<ast::FloatLitExpr>(e).value);
    case ast::Expr::Kind::BoolLit:
      return constant(loc, ElemType::Bool, llvm::cast<ast::BoolLitExpr>(e).value);
    case ast::Expr::Kind::Index: {
      auto &ix = llvm::cast<ast::IndexExpr>(e);
      Value base = expr(*ix.base);
      SmallVector<Value> indices = subscriptValues(ix.subscripts);
      return extract(base, ix.subscripts, indices, 0, 0);
    }
    case ast::Expr::Kind::Call:
      return call(llvm::cast<ast::CallExpr>(e));
    case ast::Expr::Kind::Unary: {
      auto &u = llvm::cast<ast::UnaryExpr>(e);
      Value x = expr(*u.operand);
      return nns::UnaryOp::create(
          builder, loc, u.op == ast::UnaryOp::Neg ? nns::UnaryKind::Neg : nns::UnaryKind::Not, x);
    }
    case ast::Expr::Kind::Binary:
      return binary(llvm::cast<ast::BinaryExpr>(e));
    default:
      break;
    }
    llvm_unreachable("expression kind Sema does not accept as a value");
  }

  /// The index values of `x[...]`, generated once per statement.
  SmallVector<Value> subscriptValues(const std::vector<ast::Subscript> &subs) {
    SmallVector<Value> values;
    for (const ast::Subscript &sub : subs)
      values.push_back(sub.kind == ast::Subscript::Kind::Index ? expr(*sub.index) : Value());
    return values;
  }

  /// One slice entry: start, stop, stride from Sema's constants.
  std::tuple<int64_t, IntegerAttr, int64_t> sliceBounds(const ast::Subscript &sub) {
    int64_t start = sub.lo ? *sub.lo->sema.constant : 0;
    int64_t stride = sub.stride ? *sub.stride->sema.constant : 1;
    IntegerAttr stop = sub.hi ? builder.getI64IntegerAttr(*sub.hi->sema.constant) : IntegerAttr();
    return {start, stop, stride};
  }

  /// `base[subs[i:]]`, where `dim` is the dimension subs[i] applies to.
  Value extract(Value base, const std::vector<ast::Subscript> &subs, ArrayRef<Value> indices,
                size_t i, int64_t dim) {
    for (; i < subs.size(); ++i) {
      base = extractOne(base, subs[i], indices[i], dim);
      if (subs[i].kind == ast::Subscript::Kind::Slice)
        ++dim;
    }
    return base;
  }

  /// `dest` with `dest[subs[i:]] = value`.
  Value scatter(Location loc, Value dest, const std::vector<ast::Subscript> &subs,
                ArrayRef<Value> indices, size_t i, int64_t dim, Value value) {
    if (i == subs.size())
      return value;
    const ast::Subscript &sub = subs[i];
    bool isIndex = sub.kind == ast::Subscript::Kind::Index;
    Value inner = value;
    if (i + 1 < subs.size()) {
      inner = extractOne(dest, sub, indices[i], dim);
      inner = scatter(loc, inner, subs, indices, i + 1, isIndex ? dim : dim + 1, value);
    }
    if (isIndex)
      return nns::SelectScatterOp::create(builder, sub.loc, typeOf(dest), inner, dest, indices[i],
                                          builder.getI64IntegerAttr(dim));
    auto [start, stop, stride] = sliceBounds(sub);
    return nns::SliceScatterOp::create(
        builder, sub.loc, typeOf(dest), inner, dest, builder.getI64IntegerAttr(dim),
        builder.getI64IntegerAttr(start), stop, builder.getI64IntegerAttr(stride));
  }

  Value extractOne(Value base, const ast::Subscript &sub, Value index, int64_t dim) {
    RankedTensorType t = typeOf(base);
    if (sub.kind == ast::Subscript::Kind::Index) {
      SmallVector<int64_t> shape(t.getShape());
      shape.erase(shape.begin() + dim);
      return nns::SelectOp::create(builder, sub.loc,
                                   RankedTensorType::get(shape, t.getElementType()), base, index,
                                   builder.getI64IntegerAttr(dim));
    }
    auto [start, stop, stride] = sliceBounds(sub);
    return nns::SliceOp::create(builder, sub.loc, nns::inferSliceType(t, dim, start, stop, stride),
                                base, builder.getI64IntegerAttr(dim),
                                builder.getI64IntegerAttr(start), stop,
                                builder.getI64IntegerAttr(stride));
  }

  Value binaryOp(Location loc, nns::BinaryKind kind, Value a, Value b, Type elem) {
    a = castTo(loc, a, elem);
    b = castTo(loc, b, elem);
    SmallVector<int64_t> shape;
    (void)nns::broadcastShapes(typeOf(a).getShape(), typeOf(b).getShape(), shape);
    return nns::BinaryOp::create(builder, loc, RankedTensorType::get(shape, elem), kind, a, b);
  }

  Value binary(const ast::BinaryExpr &e) {
    Value l = expr(*e.lhs), r = expr(*e.rhs);
    Location loc = e.loc();
    using Op = ast::BinaryOp;
    Type f32 = builder.getF32Type();
    switch (e.op) {
    case Op::MatMul:
      return nns::MatmulOp::create(builder, loc, tensorType(e.sema.type), castTo(loc, l, f32),
                                   castTo(loc, r, f32));
    case Op::Add:
      return binaryOp(loc, nns::BinaryKind::Add, l, r, elemType(e.sema.type.elem));
    case Op::Sub:
      return binaryOp(loc, nns::BinaryKind::Sub, l, r, elemType(e.sema.type.elem));
    case Op::Mul:
      return binaryOp(loc, nns::BinaryKind::Mul, l, r, elemType(e.sema.type.elem));
    case Op::Div:
      return binaryOp(loc, nns::BinaryKind::Div, l, r, f32);
    case Op::And:
      return binaryOp(loc, nns::BinaryKind::And, l, r, builder.getI1Type());
    case Op::Or:
      return binaryOp(loc, nns::BinaryKind::Or, l, r, builder.getI1Type());
    default:
      break;
    }
    nns::CompareKind kind = e.op == Op::Lt   ? nns::CompareKind::LT
                            : e.op == Op::Le ? nns::CompareKind::LE
                            : e.op == Op::Gt ? nns::CompareKind::GT
                            : e.op == Op::Ge ? nns::CompareKind::GE
                            : e.op == Op::Eq ? nns::CompareKind::EQ
                                             : nns::CompareKind::NE;
    Type common = elemType(promote(e.lhs->sema.type.elem, e.rhs->sema.type.elem));
    return nns::CompareOp::create(builder, loc, tensorType(e.sema.type), kind,
                                  castTo(loc, l, common), castTo(loc, r, common));
  }

  Value call(const ast::CallExpr &e) {
    const ast::ExprSema &s = e.sema;
    Location loc = e.loc();
    RankedTensorType result = tensorType(s.type);
    if (s.module >= 0 && s.builtin != Builtin::Skip) {
      Value x = expr(*e.args[0].value);
      return nns::CallModuleOp::create(builder, loc, result, arch.modules()[s.module].path, x);
    }
    // Positional arguments, the receiver of a method first, then keywords by name.
    SmallVector<const ast::Expr *> pos;
    std::map<std::string, const ast::Expr *> kw;
    if (e.callee->sema.entity == ast::Entity::Method)
      pos.push_back(llvm::cast<ast::MemberExpr>(*e.callee).base.get());
    for (const ast::Arg &a : e.args) {
      if (a.keyword.empty())
        pos.push_back(a.value.get());
      else
        kw[a.keyword] = a.value.get();
    }
    Value x = expr(*pos[0]);
    Type elem = result.getElementType();
    Type f32 = builder.getF32Type();
    auto reduce = [&](nns::ReduceKind kind, Type inElem) -> Value {
      return nns::ReduceOp::create(builder, loc, result, kind, castTo(loc, x, inElem),
                                   uint64_t(s.intArg));
    };
    auto unary = [&](nns::UnaryKind kind) -> Value {
      return nns::UnaryOp::create(builder, loc, kind, castTo(loc, x, elem));
    };
    Type xElem = typeOf(x).getElementType();
    Type intOrSame = xElem.isInteger(1) ? builder.getI64Type() : xElem;
    switch (s.builtin) {
    case Builtin::Max:
    case Builtin::Min:
      if (s.intArg < 0 && pos.size() == 2 && kw.empty())
        return binaryOp(loc,
                        s.builtin == Builtin::Max ? nns::BinaryKind::Max : nns::BinaryKind::Min, x,
                        expr(*pos[1]), elem);
      return reduce(s.builtin == Builtin::Max ? nns::ReduceKind::Max : nns::ReduceKind::Min, elem);
    case Builtin::Sum:
      return reduce(nns::ReduceKind::Sum, elem);
    case Builtin::Mean:
      return reduce(nns::ReduceKind::Mean, f32);
    case Builtin::Norm:
      return reduce(nns::ReduceKind::Norm, f32);
    case Builtin::ArgMax:
      return reduce(nns::ReduceKind::ArgMax, intOrSame);
    case Builtin::ArgMin:
      return reduce(nns::ReduceKind::ArgMin, intOrSame);
    case Builtin::Softmax:
    case Builtin::LogSoftmax:
      return nns::SoftmaxOp::create(builder, loc, result, castTo(loc, x, f32), uint64_t(s.intArg),
                                    s.builtin == Builtin::LogSoftmax);
    case Builtin::Exp:
      return unary(nns::UnaryKind::Exp);
    case Builtin::Log:
      return unary(nns::UnaryKind::Log);
    case Builtin::Sqrt:
      return unary(nns::UnaryKind::Sqrt);
    case Builtin::Abs:
      return unary(nns::UnaryKind::Abs);
    case Builtin::Relu:
      return unary(nns::UnaryKind::Relu);
    case Builtin::Gelu:
      return unary(nns::UnaryKind::Gelu);
    case Builtin::Silu:
      return unary(nns::UnaryKind::Silu);
    case Builtin::Tanh:
      return unary(nns::UnaryKind::Tanh);
    case Builtin::Sigmoid:
      return unary(nns::UnaryKind::Sigmoid);
    case Builtin::Float:
      return castTo(loc, x, f32);
    case Builtin::ZerosLike:
    case Builtin::OnesLike:
      return nns::BroadcastOp::create(
          builder, loc, result,
          constant(loc, s.type.elem, s.builtin == Builtin::OnesLike ? 1.0 : 0.0), x);
    case Builtin::Clamp: {
      auto bound = [&](size_t position, const char *name) -> const ast::Expr * {
        if (pos.size() > position)
          return pos[position];
        auto it = kw.find(name);
        return it == kw.end() ? nullptr : it->second;
      };
      Value clamped = x;
      if (const ast::Expr *lo = bound(1, "min"))
        clamped = binaryOp(loc, nns::BinaryKind::Max, clamped, expr(*lo), elem);
      if (const ast::Expr *hi = bound(2, "max"))
        clamped = binaryOp(loc, nns::BinaryKind::Min, clamped, expr(*hi), elem);
      return clamped;
    }
    case Builtin::Where: {
      Value a = castTo(loc, expr(*pos[1]), elem), b = castTo(loc, expr(*pos[2]), elem);
      return nns::WhereOp::create(builder, loc, result, x, a, b);
    }
    case Builtin::TopK:
      return nns::TopKOp::create(builder, loc, result, x, uint64_t(s.intArg));
    default:
      break;
    }
    llvm_unreachable("builtin without a value");
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  void block(const ast::Block &b) {
    for (const ast::StmtPtr &s : b.stmts)
      stmt(*s);
  }

  void stmt(const ast::Stmt &s) {
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

  nns::BinaryKind binaryKindOf(ast::AssignOp op) {
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

  void assign(const ast::AssignStmt &a) {
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
        nns::SiteWriteOp::create(builder, loc, v, path, order, phaseAttr(i),
                                 TypeAttr::get(siteType));
        return;
      }
      nns::UpdateKind kind = a.op == ast::AssignOp::Add   ? nns::UpdateKind::Add
                             : a.op == ast::AssignOp::Sub ? nns::UpdateKind::Sub
                             : a.op == ast::AssignOp::Mul ? nns::UpdateKind::Mul
                                                          : nns::UpdateKind::Div;
      nns::SiteUpdateOp::create(builder, loc, nns::UpdateKindAttr::get(builder.getContext(), kind),
                                v, path, order, phaseAttr(i), TypeAttr::get(siteType));
      return;
    }
    // SITE[IDX] op= v: read, update the part, scatter it back, write the whole.
    Value old = readSite(loc, i, siteType);
    SmallVector<Value> indices = subscriptValues(*subs);
    v = updated(
        loc, a.op, [&] { return extract(old, *subs, indices, 0, 0); }, v);
    Value full = scatter(loc, old, *subs, indices, 0, 0, castTo(loc, v, siteType.getElementType()));
    nns::SiteWriteOp::create(builder, loc, full, path, order, phaseAttr(i),
                             TypeAttr::get(siteType));
  }

  /// For `op=`, the part combined with `v`; for `=`, `v` itself.
  Value updated(Location loc, ast::AssignOp op, llvm::function_ref<Value()> part, Value v) {
    if (op == ast::AssignOp::Set)
      return v;
    Value old = part();
    Type elem = op == ast::AssignOp::Div ? builder.getF32Type() : typeOf(old).getElementType();
    return binaryOp(loc, binaryKindOf(op), old, v, elem);
  }

  void exprStmt(const ast::ExprStmt &s) {
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

  void ifStmt(const ast::IfStmt &s) {
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

  void forStmt(const ast::ForStmt &s) {
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

  void invoke(const ast::InvokeStmt &s) {
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

  const schema::Architecture &arch;
  OpBuilder builder;
  std::vector<std::map<std::string, Value>> scopes;
  std::map<std::string, RankedTensorType> paramTypes;
};

} // namespace

OwningOpRef<ModuleOp> mlirGen(const ast::Program &program, const schema::Architecture &arch,
                              MLIRContext &context) {
  context.getOrLoadDialect<nns::NNSDialect>();
  context.getOrLoadDialect<arith::ArithDialect>();
  return Generator(arch, context).program(program);
}

} // namespace nnsc

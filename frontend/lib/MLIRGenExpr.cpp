//===- MLIRGenExpr.cpp - expressions, indexing and calls to nns ops -------===//

#include "MLIRGenerator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace nnsc::mlirgen {

Value Generator::expr(const ast::Expr &e) {
  const ast::ExprSema &s = e.sema;
  Location loc = e.loc();
  if (s.site >= 0 && (isa<ast::NameExpr>(e) || isa<ast::MemberExpr>(e)))
    return readSite(loc, s.site, tensorType(s.type));
  // Sema folded integer arithmetic (`-1`, `i + 1` in unrolled loops, `hidden // 2`); a name is
  // a constant when it is a model dimension.
  if (s.constant && (e.getKind() != ast::Expr::Kind::Name || s.source == ast::NameSource::Constant))
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
  case ast::Expr::Kind::Member: // `.T`, the only member that is a value of its own
    return nns::TransposeOp::create(builder, loc, tensorType(s.type),
                                    expr(*llvm::cast<ast::MemberExpr>(e).base), 0, 1);
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

SmallVector<Value> Generator::subscriptValues(const std::vector<ast::Subscript> &subs) {
  SmallVector<Value> values;
  for (const ast::Subscript &sub : subs)
    values.push_back(sub.kind == ast::Subscript::Kind::Index ? expr(*sub.index) : Value());
  return values;
}

std::tuple<int64_t, IntegerAttr, int64_t> Generator::sliceBounds(const ast::Subscript &sub) {
  int64_t start = sub.lo ? *sub.lo->sema.constant : 0;
  int64_t stride = sub.stride ? *sub.stride->sema.constant : 1;
  IntegerAttr stop = sub.hi ? builder.getI64IntegerAttr(*sub.hi->sema.constant) : IntegerAttr();
  return {start, stop, stride};
}

Value Generator::extract(Value base, const std::vector<ast::Subscript> &subs,
                         ArrayRef<Value> indices, size_t i, int64_t dim) {
  for (; i < subs.size(); ++i) {
    if (subs[i].kind == ast::Subscript::Kind::NewAxis) {
      base = unsqueeze(subs[i].loc, base, dim++);
      continue;
    }
    base = extractOne(base, subs[i], indices[i], dim);
    if (subs[i].kind == ast::Subscript::Kind::Slice)
      ++dim;
  }
  return base;
}

Value Generator::scatter(Location loc, Value dest, const std::vector<ast::Subscript> &subs,
                         ArrayRef<Value> indices, size_t i, int64_t dim, Value value) {
  if (i == subs.size())
    return value;
  const ast::Subscript &sub = subs[i];
  if (sub.kind == ast::Subscript::Kind::NewAxis) {
    // Into the value with the new dimension, then back to dest's shape.
    Value wider = unsqueeze(sub.loc, dest, dim);
    Value full =
        i + 1 == subs.size()
            ? Value(nns::BroadcastOp::create(builder, sub.loc, typeOf(wider), value, wider))
            : scatter(loc, wider, subs, indices, i + 1, dim + 1, value);
    return reshape(sub.loc, full, typeOf(dest));
  }
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

Value Generator::extractOne(Value base, const ast::Subscript &sub, Value index, int64_t dim) {
  RankedTensorType t = typeOf(base);
  if (sub.kind == ast::Subscript::Kind::Index) {
    SmallVector<int64_t> shape(t.getShape());
    shape.erase(shape.begin() + dim);
    return nns::SelectOp::create(builder, sub.loc, RankedTensorType::get(shape, t.getElementType()),
                                 base, index, builder.getI64IntegerAttr(dim));
  }
  auto [start, stop, stride] = sliceBounds(sub);
  return nns::SliceOp::create(builder, sub.loc, nns::inferSliceType(t, dim, start, stop, stride),
                              base, builder.getI64IntegerAttr(dim),
                              builder.getI64IntegerAttr(start), stop,
                              builder.getI64IntegerAttr(stride));
}

Value Generator::reshape(Location loc, Value x, RankedTensorType type) {
  type = withElem(type, typeOf(x).getElementType());
  if (typeOf(x) == type)
    return x;
  return nns::ReshapeOp::create(builder, loc, type, x);
}

Value Generator::unsqueeze(Location loc, Value x, int64_t dim) {
  SmallVector<int64_t> shape(typeOf(x).getShape());
  shape.insert(shape.begin() + dim, 1);
  return reshape(loc, x, RankedTensorType::get(shape, typeOf(x).getElementType()));
}

Value Generator::reduction(Location loc, const ast::ExprSema &s, nns::ReduceKind kind, Value x,
                           Type inElem) {
  x = castTo(loc, x, inElem);
  RankedTensorType t = typeOf(x);
  Type outElem = elemType(s.type.elem);
  int64_t dim = s.intArg;
  if (s.allDims) {
    // Over every dimension: the flattened value, as torch does (argmax is a flat index).
    int64_t count = 1;
    for (int64_t d : t.getShape())
      count = ShapedType::isDynamic(d) || ShapedType::isDynamic(count) ? ShapedType::kDynamic
                                                                       : count * d;
    x = reshape(loc, x, RankedTensorType::get({count}, inElem));
    dim = 0;
  }
  SmallVector<int64_t> reduced(typeOf(x).getShape());
  reduced.erase(reduced.begin() + dim);
  Value r = nns::ReduceOp::create(builder, loc, RankedTensorType::get(reduced, outElem), kind, x,
                                  uint64_t(dim));
  return s.keepDim ? reshape(loc, r, tensorType(s.type)) : r;
}

Value Generator::zeros(Location loc, ArrayRef<int64_t> shape, Type elem) {
  auto type = RankedTensorType::get(shape, elem);
  Attribute zero = elem.isF32() ? Attribute(builder.getF32FloatAttr(0))
                                : Attribute(builder.getIntegerAttr(elem, 0));
  return arith::ConstantOp::create(builder, loc,
                                   llvm::cast<TypedAttr>(DenseElementsAttr::get(type, zero)));
}

Value Generator::join(const ast::CallExpr &e, const ast::ListExpr &list, RankedTensorType result) {
  Location loc = e.loc();
  int64_t dim = e.sema.intArg;
  Type elem = result.getElementType();
  SmallVector<Value> parts;
  for (const ast::ExprPtr &item : list.items) {
    Value v = castTo(item->loc(), expr(*item), elem);
    parts.push_back(e.sema.builtin == Builtin::Stack ? unsqueeze(item->loc(), v, dim) : v);
  }
  if (parts.size() == 1)
    return parts[0];
  // The destination: zeros of the result's shape. Sema made the joined dim static; a token
  // dimension elsewhere comes from a one-wide slice of a part, broadcast against the zeros.
  SmallVector<int64_t> shape(result.getShape());
  bool dynamic = llvm::any_of(shape, ShapedType::isDynamic);
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = 1;
  Value dest = zeros(loc, shape, elem);
  const Value *wide = llvm::find_if(parts, [&](Value v) { return typeOf(v).getDimSize(dim) > 0; });
  if (wide == parts.end()) // every part is empty along dim, so has the result's shape
    return parts[0];
  if (dynamic) {
    RankedTensorType oneType =
        nns::inferSliceType(typeOf(*wide), dim, 0, builder.getI64IntegerAttr(1), 1);
    Value one = nns::SliceOp::create(builder, loc, oneType, *wide, builder.getI64IntegerAttr(dim),
                                     builder.getI64IntegerAttr(0), builder.getI64IntegerAttr(1),
                                     builder.getI64IntegerAttr(1));
    Value like = nns::BroadcastOp::create(builder, loc, oneType, zeros(loc, {}, elem), one);
    dest = binaryOp(loc, elem.isInteger(1) ? nns::BinaryKind::Or : nns::BinaryKind::Add, like, dest,
                    elem);
  }
  int64_t at = 0;
  for (Value part : parts) {
    int64_t size = typeOf(part).getDimSize(dim);
    if (size == 0)
      continue;
    dest = nns::SliceScatterOp::create(
        builder, loc, result, part, dest, builder.getI64IntegerAttr(dim),
        builder.getI64IntegerAttr(at), builder.getI64IntegerAttr(at + size),
        builder.getI64IntegerAttr(1));
    at += size;
  }
  return dest;
}

Value Generator::binaryOp(Location loc, nns::BinaryKind kind, Value a, Value b, Type elem) {
  a = castTo(loc, a, elem);
  b = castTo(loc, b, elem);
  SmallVector<int64_t> shape;
  (void)nns::broadcastShapes(typeOf(a).getShape(), typeOf(b).getShape(), shape);
  return nns::BinaryOp::create(builder, loc, RankedTensorType::get(shape, elem), kind, a, b);
}

Value Generator::binary(const ast::BinaryExpr &e) {
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
  case Op::FloorDiv:
  case Op::Mod:
    llvm_unreachable("Sema folds '//' and '%' (integer constants only)");
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
  return nns::CompareOp::create(builder, loc, tensorType(e.sema.type), kind, castTo(loc, l, common),
                                castTo(loc, r, common));
}

Value Generator::call(const ast::CallExpr &e) {
  const ast::ExprSema &s = e.sema;
  Location loc = e.loc();
  RankedTensorType result = tensorType(s.type);
  if (s.module >= 0 && s.builtin != Builtin::Skip) {
    Value x = expr(*e.args[0].value);
    return nns::CallModuleOp::create(builder, loc, result, arch.modules()[s.module].path, x);
  }
  if (s.builtin == Builtin::Cat || s.builtin == Builtin::Stack)
    return join(e, llvm::cast<ast::ListExpr>(*e.args[0].value), result);
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
    return reduction(loc, s, kind, x, inElem);
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
      return binaryOp(loc, s.builtin == Builtin::Max ? nns::BinaryKind::Max : nns::BinaryKind::Min,
                      x, expr(*pos[1]), elem);
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
  case Builtin::Unsqueeze:
  case Builtin::View:
  case Builtin::Reshape:
    return reshape(loc, x, result);
  case Builtin::Transpose:
    return nns::TransposeOp::create(builder, loc, result, x, uint64_t(s.intArg),
                                    uint64_t(s.intArg2));
  case Builtin::Outer: {
    Value a = unsqueeze(loc, castTo(loc, x, elem), 1);
    Value b = unsqueeze(loc, castTo(loc, expr(*pos[1]), elem), 0);
    return binaryOp(loc, nns::BinaryKind::Mul, a, b, elem);
  }
  case Builtin::Expand:
  case Builtin::BroadcastTo: {
    // x broadcast against a zero (false) of the new sizes; the sizes x keeps stay its own.
    SmallVector<int64_t> shape(result.getShape());
    RankedTensorType xt = typeOf(x);
    for (int64_t d = 0; d < result.getRank(); ++d) {
      int64_t from = d - (result.getRank() - xt.getRank());
      if (ShapedType::isDynamic(shape[d]) || (from >= 0 && xt.getDimSize(from) == shape[d]))
        shape[d] = 1;
    }
    return binaryOp(loc, elem.isInteger(1) ? nns::BinaryKind::Or : nns::BinaryKind::Add, x,
                    zeros(loc, shape, elem), elem);
  }
  default:
    break;
  }
  llvm_unreachable("builtin without a value");
}

} // namespace nnsc::mlirgen

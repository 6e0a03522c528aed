//===- ScalarOps.cpp - scalar arith of nns element types -------------------===//

#include "ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace nnsc::kernels {

Value convert(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (isa<FloatType>(to))
    return from.isInteger(1) ? arith::UIToFPOp::create(b, loc, to, v).getResult()
                             : arith::SIToFPOp::create(b, loc, to, v).getResult();
  if (to.isInteger(1)) {
    Value zero = isa<FloatType>(from) ? arith::ConstantOp::create(b, loc, b.getZeroAttr(from))
                                      : arith::ConstantOp::create(b, loc, b.getZeroAttr(from));
    return isa<FloatType>(from)
               ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero).getResult()
               : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero).getResult();
  }
  if (isa<FloatType>(from))
    return arith::FPToSIOp::create(b, loc, to, v);
  return arith::ExtUIOp::create(b, loc, to, v);
}

/// erf by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7), for the exact GELU.
static Value erf(OpBuilder &b, Location loc, Value x) {
  Type f32 = x.getType();
  auto c = [&](double v) { return arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, v)); };
  Value ax = math::AbsFOp::create(b, loc, x);
  Value t = arith::DivFOp::create(
      b, loc, c(1.0),
      arith::AddFOp::create(b, loc, c(1.0), arith::MulFOp::create(b, loc, c(0.3275911), ax)));
  Value poly = c(1.061405429);
  for (double k : {-1.453152027, 1.421413741, -0.284496736, 0.254829592})
    poly = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, poly, t), c(k));
  poly = arith::MulFOp::create(b, loc, poly, t);
  Value e = math::ExpOp::create(
      b, loc, arith::NegFOp::create(b, loc, arith::MulFOp::create(b, loc, ax, ax)));
  Value y = arith::SubFOp::create(b, loc, c(1.0), arith::MulFOp::create(b, loc, poly, e));
  return math::CopySignOp::create(b, loc, y, x);
}

static Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(x.getType(), 1.0));
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
}

Value unary(OpBuilder &b, Location loc, nns::UnaryKind kind, Value x) {
  Type type = x.getType();
  bool isFloat = isa<FloatType>(type);
  auto c = [&](double v) {
    return isFloat
               ? arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v)).getResult()
               : arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, int64_t(v))).getResult();
  };
  switch (kind) {
  case nns::UnaryKind::Neg:
    return isFloat ? arith::NegFOp::create(b, loc, x).getResult()
                   : arith::SubIOp::create(b, loc, c(0), x).getResult();
  case nns::UnaryKind::Not:
    return arith::XOrIOp::create(b, loc, x, arith::ConstantIntOp::create(b, loc, type, 1));
  case nns::UnaryKind::Exp:
    return math::ExpOp::create(b, loc, x);
  case nns::UnaryKind::Log:
    return math::LogOp::create(b, loc, x);
  case nns::UnaryKind::Sqrt:
    return math::SqrtOp::create(b, loc, x);
  case nns::UnaryKind::Abs:
    return isFloat ? math::AbsFOp::create(b, loc, x).getResult()
                   : math::AbsIOp::create(b, loc, x).getResult();
  case nns::UnaryKind::Relu:
    return isFloat ? arith::MaximumFOp::create(b, loc, x, c(0)).getResult()
                   : arith::MaxSIOp::create(b, loc, x, c(0)).getResult();
  case nns::UnaryKind::Gelu: {
    Value scaled = arith::MulFOp::create(b, loc, x, c(0.70710678118654752));
    Value half = arith::MulFOp::create(b, loc, x, c(0.5));
    return arith::MulFOp::create(b, loc, half,
                                 arith::AddFOp::create(b, loc, c(1.0), erf(b, loc, scaled)));
  }
  case nns::UnaryKind::Silu:
    return arith::MulFOp::create(b, loc, x, sigmoid(b, loc, x));
  case nns::UnaryKind::Tanh: {
    Value two = c(2.0);
    Value s = sigmoid(b, loc, arith::MulFOp::create(b, loc, x, two));
    return arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, s, two), c(1.0));
  }
  case nns::UnaryKind::Sigmoid:
    return sigmoid(b, loc, x);
  }
  llvm_unreachable("unknown unary kind");
}

Value binary(OpBuilder &b, Location loc, nns::BinaryKind kind, Value x, Value y, Type type) {
  x = convert(b, loc, x, type);
  y = convert(b, loc, y, type);
  bool isFloat = isa<FloatType>(type);
  switch (kind) {
  case nns::BinaryKind::Add:
    return isFloat ? arith::AddFOp::create(b, loc, x, y).getResult()
                   : arith::AddIOp::create(b, loc, x, y).getResult();
  case nns::BinaryKind::Sub:
    return isFloat ? arith::SubFOp::create(b, loc, x, y).getResult()
                   : arith::SubIOp::create(b, loc, x, y).getResult();
  case nns::BinaryKind::Mul:
    return isFloat ? arith::MulFOp::create(b, loc, x, y).getResult()
                   : arith::MulIOp::create(b, loc, x, y).getResult();
  case nns::BinaryKind::Div:
    return isFloat ? arith::DivFOp::create(b, loc, x, y).getResult()
                   : arith::FloorDivSIOp::create(b, loc, x, y).getResult();
  case nns::BinaryKind::Max:
    return isFloat ? arith::MaximumFOp::create(b, loc, x, y).getResult()
                   : arith::MaxSIOp::create(b, loc, x, y).getResult();
  case nns::BinaryKind::Min:
    return isFloat ? arith::MinimumFOp::create(b, loc, x, y).getResult()
                   : arith::MinSIOp::create(b, loc, x, y).getResult();
  case nns::BinaryKind::And:
    return arith::AndIOp::create(b, loc, x, y);
  case nns::BinaryKind::Or:
    return arith::OrIOp::create(b, loc, x, y);
  }
  llvm_unreachable("unknown binary kind");
}

Value compare(OpBuilder &b, Location loc, nns::CompareKind kind, Value x, Value y) {
  Type type =
      isa<FloatType>(x.getType()) || isa<FloatType>(y.getType()) ? b.getF32Type() : x.getType();
  if (y.getType() != type && !isa<FloatType>(type))
    type = b.getI64Type();
  x = convert(b, loc, x, type);
  y = convert(b, loc, y, type);
  if (isa<FloatType>(type)) {
    arith::CmpFPredicate p;
    switch (kind) {
    case nns::CompareKind::LT:
      p = arith::CmpFPredicate::OLT;
      break;
    case nns::CompareKind::LE:
      p = arith::CmpFPredicate::OLE;
      break;
    case nns::CompareKind::GT:
      p = arith::CmpFPredicate::OGT;
      break;
    case nns::CompareKind::GE:
      p = arith::CmpFPredicate::OGE;
      break;
    case nns::CompareKind::EQ:
      p = arith::CmpFPredicate::OEQ;
      break;
    case nns::CompareKind::NE:
      p = arith::CmpFPredicate::UNE;
      break;
    }
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  arith::CmpIPredicate p;
  switch (kind) {
  case nns::CompareKind::LT:
    p = arith::CmpIPredicate::slt;
    break;
  case nns::CompareKind::LE:
    p = arith::CmpIPredicate::sle;
    break;
  case nns::CompareKind::GT:
    p = arith::CmpIPredicate::sgt;
    break;
  case nns::CompareKind::GE:
    p = arith::CmpIPredicate::sge;
    break;
  case nns::CompareKind::EQ:
    p = arith::CmpIPredicate::eq;
    break;
  case nns::CompareKind::NE:
    p = arith::CmpIPredicate::ne;
    break;
  }
  return arith::CmpIOp::create(b, loc, p, x, y);
}

} // namespace nnsc::kernels

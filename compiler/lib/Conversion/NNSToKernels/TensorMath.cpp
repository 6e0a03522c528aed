//===- TensorMath.cpp - nns tensor math on memrefs with scf loops ---------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace nnsc::kernels {

/// Static buffers up to this size live on the stack.
static constexpr int64_t kStackBytes = 4096;

Value KernelEmitter::dim(Value memref, int64_t d) {
  return memref::DimOp::create(builder, func.getLoc(), memref, d);
}

Value KernelEmitter::toUniform(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  MemRefType uniform = uniformType(type.getElementType(), type.getRank());
  if (type == uniform)
    return memref;
  return memref::CastOp::create(builder, func.getLoc(), uniform, memref);
}

Value KernelEmitter::alloc(Type elementType, ValueRange sizes, bool tracked) {
  Location loc = func.getLoc();
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamic;
  int64_t bytes = std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
  for (Value size : sizes) {
    if (std::optional<int64_t> c = getConstantIntValue(size)) {
      shape.push_back(*c);
      bytes *= *c;
    } else {
      shape.push_back(ShapedType::kDynamic);
      dynamic.push_back(size);
    }
  }
  auto type = MemRefType::get(shape, elementType);
  if (tracked && dynamic.empty() && bytes <= kStackBytes) {
    // Static buffers live in the entry block: one stack slot reused by every group.
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&func.getBody().front());
    Value buffer = memref::AllocaOp::create(builder, loc, type);
    builder.setInsertionPointAfter(buffer.getDefiningOp());
    return toUniform(buffer);
  }
  Value buffer = memref::AllocOp::create(builder, loc, type, dynamic);
  if (tracked)
    scopes.back().push_back(buffer);
  return toUniform(buffer);
}

Value KernelEmitter::loadScalar(Value memref) {
  return memref::LoadOp::create(builder, func.getLoc(), memref, ValueRange{});
}

/// Converts a scalar between the element types of nns values (f32, i64, i1).
static Value convert(OpBuilder &b, Location loc, Value v, Type to) {
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

Value KernelEmitter::emitElementwise(Operation *op, ValueRange inputs,
                                     function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  SmallVector<Value> memrefs;
  for (Value input : inputs)
    memrefs.push_back(lookup(input));
  // Dynamic result sizes come from an input whose aligned dimension is dynamic too.
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d)) {
      sizes.push_back(index(resultType.getDimSize(d)));
      continue;
    }
    Value size;
    for (auto [input, memref] : llvm::zip(inputs, memrefs)) {
      auto type = cast<RankedTensorType>(input.getType());
      int64_t j = d - (rank - type.getRank());
      if (j >= 0 && type.isDynamicDim(j)) {
        size = dim(memref, j);
        break;
      }
    }
    assert(size && "a dynamic result dimension comes from a dynamic input dimension");
    sizes.push_back(size);
  }
  // Broadcasting assumes that dynamic sizes match where they meet a size other than 1.
  for (auto [input, memref] : llvm::zip(inputs, memrefs)) {
    auto type = cast<RankedTensorType>(input.getType());
    for (int64_t j = 0; j < type.getRank(); ++j) {
      int64_t d = j + rank - type.getRank();
      if (type.getDimSize(j) == 1 || (!type.isDynamicDim(j) && !resultType.isDynamicDim(d)))
        continue;
      Value eq =
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, dim(memref, j), sizes[d]);
      check(eq,
            "shape mismatch: dimension " + llvm::Twine(j) + " of an operand of '" +
                op->getName().getStringRef() + "' does not match the other operands",
            loc);
    }
  }
  Value result = alloc(resultType.getElementType(), sizes);
  SmallVector<Value> lower(rank, index(0)), steps(rank, index(1));
  scf::buildLoopNest(
      builder, loc, lower, sizes, steps, [&](OpBuilder &b, Location l, ValueRange ivs) {
        SmallVector<Value> scalars;
        for (auto [input, memref] : llvm::zip(inputs, memrefs)) {
          auto type = cast<RankedTensorType>(input.getType());
          SmallVector<Value> indices;
          for (int64_t j = 0; j < type.getRank(); ++j)
            indices.push_back(type.getDimSize(j) == 1 ? arith::ConstantIndexOp::create(b, l, 0)
                                                      : ivs[j + rank - type.getRank()]);
          scalars.push_back(memref::LoadOp::create(b, l, memref, indices));
        }
        memref::StoreOp::create(b, l, body(b, l, scalars), result, ivs);
      });
  return result;
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

static Value unary(OpBuilder &b, Location loc, nns::UnaryKind kind, Value x) {
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

static Value binary(OpBuilder &b, Location loc, nns::BinaryKind kind, Value x, Value y, Type type) {
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

static Value compare(OpBuilder &b, Location loc, nns::CompareKind kind, Value x, Value y) {
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

Value KernelEmitter::emitConstant(DenseElementsAttr value, Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<Value> sizes;
  for (int64_t size : type.getShape())
    sizes.push_back(index(size));
  Value result = alloc(type.getElementType(), sizes);
  SmallVector<Attribute> elements(value.getValues<Attribute>());
  if (value.isSplat()) {
    Value scalar = arith::ConstantOp::create(builder, loc, cast<TypedAttr>(elements.front()));
    SmallVector<Value> lower(type.getRank(), index(0)), steps(type.getRank(), index(1));
    scf::buildLoopNest(builder, loc, lower, sizes, steps,
                       [&](OpBuilder &b, Location l, ValueRange ivs) {
                         memref::StoreOp::create(b, l, scalar, result, ivs);
                       });
    return result;
  }
  for (auto [i, element] : llvm::enumerate(elements)) {
    SmallVector<Value> indices;
    int64_t rest = i;
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      indices.insert(indices.begin(), index(rest % type.getDimSize(d)));
      rest /= type.getDimSize(d);
    }
    memref::StoreOp::create(builder, loc,
                            arith::ConstantOp::create(builder, loc, cast<TypedAttr>(element)),
                            result, indices);
  }
  return result;
}

Value KernelEmitter::emitReduce(nns::ReduceOp op) {
  Location loc = op.getLoc();
  Value input = lookup(op.getInput());
  auto inputType = op.getInput().getType();
  int64_t rank = inputType.getRank(), axis = op.getDim();
  Type resultElement = op.getResult().getType().getElementType();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      sizes.push_back(dim(input, d));
  Value length = dim(input, axis);
  nns::ReduceKind kind = op.getKind();
  bool isArg = kind == nns::ReduceKind::ArgMax || kind == nns::ReduceKind::ArgMin;
  bool isExtreme = isArg || kind == nns::ReduceKind::Max || kind == nns::ReduceKind::Min;
  if (isExtreme)
    check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sgt, length, index(0)),
          "reduction over an empty dimension", loc);
  Value result = alloc(resultElement, sizes);
  Type f32 = builder.getF32Type();
  SmallVector<Value> lower(sizes.size(), index(0)), steps(sizes.size(), index(1));
  scf::buildLoopNest(
      builder, loc, lower, sizes, steps, [&](OpBuilder &b, Location l, ValueRange ivs) {
        auto at = [&](Value k) {
          SmallVector<Value> indices(ivs.begin(), ivs.end());
          indices.insert(indices.begin() + axis, k);
          return convert(b, l, memref::LoadOp::create(b, l, input, indices), f32);
        };
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value one = arith::ConstantIndexOp::create(b, l, 1);
        Value out;
        if (isExtreme) {
          bool wantMax = kind == nns::ReduceKind::Max || kind == nns::ReduceKind::ArgMax;
          // First occurrence wins, as in torch; NaN is treated as the extreme value.
          auto loop = scf::ForOp::create(
              b, l, one, length, one, ValueRange{at(zero), zero},
              [&](OpBuilder &ib, Location il, Value k, ValueRange acc) {
                Value v = at(k);
                Value better = arith::CmpFOp::create(
                    ib, il, wantMax ? arith::CmpFPredicate::UGT : arith::CmpFPredicate::ULT, v,
                    acc[0]);
                Value accNaN =
                    arith::CmpFOp::create(ib, il, arith::CmpFPredicate::UNO, acc[0], acc[0]);
                better = arith::AndIOp::create(
                    ib, il, better,
                    arith::XOrIOp::create(ib, il, accNaN,
                                          arith::ConstantIntOp::create(ib, il, ib.getI1Type(), 1)));
                scf::YieldOp::create(
                    ib, il,
                    ValueRange{arith::SelectOp::create(ib, il, better, v, acc[0]),
                               arith::SelectOp::create(ib, il, better, k, acc[1])});
              });
          out =
              isArg
                  ? arith::IndexCastOp::create(b, l, b.getI64Type(), loop.getResult(1)).getResult()
                  : convert(b, l, loop.getResult(0), resultElement);
        } else {
          Value init = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0));
          auto loop = scf::ForOp::create(
              b, l, zero, length, one, ValueRange{init},
              [&](OpBuilder &ib, Location il, Value k, ValueRange acc) {
                Value v = at(k);
                if (kind == nns::ReduceKind::Norm)
                  v = arith::MulFOp::create(ib, il, v, v);
                scf::YieldOp::create(ib, il, ValueRange{arith::AddFOp::create(ib, il, acc[0], v)});
              });
          Value sum = loop.getResult(0);
          if (kind == nns::ReduceKind::Mean)
            sum = arith::DivFOp::create(
                b, l, sum,
                arith::SIToFPOp::create(b, l, f32,
                                        arith::IndexCastOp::create(b, l, b.getI64Type(), length)));
          if (kind == nns::ReduceKind::Norm)
            sum = math::SqrtOp::create(b, l, sum);
          out =
              isa<FloatType>(resultElement) ? sum : convert(b, l, loop.getResult(0), resultElement);
          if (kind == nns::ReduceKind::Sum && !isa<FloatType>(resultElement)) {
            // Integer sums stay exact.
            auto exact = scf::ForOp::create(
                b, l, zero, length, one,
                ValueRange{arith::ConstantIntOp::create(b, l, resultElement, 0)},
                [&](OpBuilder &ib, Location il, Value k, ValueRange acc) {
                  SmallVector<Value> indices(ivs.begin(), ivs.end());
                  indices.insert(indices.begin() + axis, k);
                  Value v = convert(ib, il, memref::LoadOp::create(ib, il, input, indices),
                                    resultElement);
                  scf::YieldOp::create(ib, il,
                                       ValueRange{arith::AddIOp::create(ib, il, acc[0], v)});
                });
            out = exact.getResult(0);
          }
        }
        memref::StoreOp::create(b, l, out, result, ivs);
      });
  return result;
}

Value KernelEmitter::emitSoftmax(nns::SoftmaxOp op) {
  Location loc = op.getLoc();
  Value input = lookup(op.getInput());
  int64_t rank = op.getInput().getType().getRank(), axis = op.getDim();
  SmallVector<Value> sizes, outer;
  for (int64_t d = 0; d < rank; ++d) {
    sizes.push_back(dim(input, d));
    if (d != axis)
      outer.push_back(sizes.back());
  }
  Value length = sizes[axis];
  Value result = alloc(builder.getF32Type(), sizes);
  bool log = op.getLog();
  SmallVector<Value> lower(outer.size(), index(0)), steps(outer.size(), index(1));
  scf::buildLoopNest(
      builder, loc, lower, outer, steps, [&](OpBuilder &b, Location l, ValueRange ivs) {
        auto indicesAt = [&](Value k) {
          SmallVector<Value> indices(ivs.begin(), ivs.end());
          indices.insert(indices.begin() + axis, k);
          return indices;
        };
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value one = arith::ConstantIndexOp::create(b, l, 1);
        Value negInf = arith::ConstantOp::create(
            b, l, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
        auto maxLoop = scf::ForOp::create(
            b, l, zero, length, one, ValueRange{negInf},
            [&](OpBuilder &ib, Location il, Value k, ValueRange acc) {
              Value v = memref::LoadOp::create(ib, il, input, indicesAt(k));
              scf::YieldOp::create(ib, il,
                                   ValueRange{arith::MaximumFOp::create(ib, il, acc[0], v)});
            });
        Value max = maxLoop.getResult(0);
        auto sumLoop = scf::ForOp::create(
            b, l, zero, length, one,
            ValueRange{arith::ConstantOp::create(b, l, b.getF32FloatAttr(0))},
            [&](OpBuilder &ib, Location il, Value k, ValueRange acc) {
              Value v = memref::LoadOp::create(ib, il, input, indicesAt(k));
              Value e = math::ExpOp::create(ib, il, arith::SubFOp::create(ib, il, v, max));
              scf::YieldOp::create(ib, il, ValueRange{arith::AddFOp::create(ib, il, acc[0], e)});
            });
        Value sum = sumLoop.getResult(0);
        Value logSum = math::LogOp::create(b, l, sum);
        scf::buildLoopNest(b, l, ValueRange{zero}, ValueRange{length}, ValueRange{one},
                           [&](OpBuilder &ib, Location il, ValueRange k) {
                             Value v = memref::LoadOp::create(ib, il, input, indicesAt(k[0]));
                             Value shifted = arith::SubFOp::create(ib, il, v, max);
                             Value out =
                                 log ? arith::SubFOp::create(ib, il, shifted, logSum).getResult()
                                     : arith::DivFOp::create(
                                           ib, il, math::ExpOp::create(ib, il, shifted), sum)
                                           .getResult();
                             memref::StoreOp::create(ib, il, out, result, indicesAt(k[0]));
                           });
      });
  return result;
}

Value KernelEmitter::emitMatmul(nns::MatmulOp op) {
  Location loc = op.getLoc();
  Value lhs = lookup(op.getLhs()), rhs = lookup(op.getRhs());
  int64_t lhsRank = op.getLhs().getType().getRank(), rhsRank = op.getRhs().getType().getRank();
  Value k = dim(lhs, lhsRank - 1);
  check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, k, dim(rhs, 0)),
        "shape mismatch: the inner dimensions of '@' differ", loc);
  SmallVector<Value> sizes;
  if (lhsRank == 2)
    sizes.push_back(dim(lhs, 0));
  if (rhsRank == 2)
    sizes.push_back(dim(rhs, 1));
  Type f32 = builder.getF32Type();
  Value result = alloc(f32, sizes);
  SmallVector<Value> lower(sizes.size(), index(0)), steps(sizes.size(), index(1));
  scf::buildLoopNest(
      builder, loc, lower, sizes, steps, [&](OpBuilder &b, Location l, ValueRange ivs) {
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value one = arith::ConstantIndexOp::create(b, l, 1);
        auto loop = scf::ForOp::create(
            b, l, zero, k, one, ValueRange{arith::ConstantOp::create(b, l, b.getF32FloatAttr(0))},
            [&](OpBuilder &ib, Location il, Value kk, ValueRange acc) {
              SmallVector<Value> li, ri{kk};
              if (lhsRank == 2)
                li.push_back(ivs[0]);
              li.push_back(kk);
              if (rhsRank == 2)
                ri.push_back(ivs.back());
              Value x = convert(ib, il, memref::LoadOp::create(ib, il, lhs, li), f32);
              Value y = convert(ib, il, memref::LoadOp::create(ib, il, rhs, ri), f32);
              scf::YieldOp::create(ib, il,
                                   ValueRange{arith::AddFOp::create(
                                       ib, il, acc[0], arith::MulFOp::create(ib, il, x, y))});
            });
        memref::StoreOp::create(b, l, loop.getResult(0), result, ivs);
      });
  return result;
}

Value KernelEmitter::emitTopK(nns::TopKOp op) {
  Location loc = op.getLoc();
  Value input = lookup(op.getInput());
  int64_t k = op.getK();
  Value length = dim(input, 0);
  check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle, index(k), length),
        "topk: k = " + llvm::Twine(k) + " exceeds the size of the dimension", loc);
  Type f32 = builder.getF32Type();
  Value scratch = alloc(builder.getI1Type(), ValueRange{length});
  Value result = alloc(f32, ValueRange{index(k)});
  Value zero = index(0), one = index(1);
  scf::buildLoopNest(builder, loc, ValueRange{zero}, ValueRange{length}, ValueRange{one},
                     [&](OpBuilder &b, Location l, ValueRange i) {
                       memref::StoreOp::create(
                           b, l, arith::ConstantIntOp::create(b, l, b.getI1Type(), 0), scratch, i);
                     });
  scf::buildLoopNest(
      builder, loc, ValueRange{zero}, ValueRange{index(k)}, ValueRange{one},
      [&](OpBuilder &b, Location l, ValueRange r) {
        Value negInf = arith::ConstantOp::create(
            b, l, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
        Value none = arith::ConstantIndexOp::create(b, l, -1);
        auto loop = scf::ForOp::create(
            b, l, arith::ConstantIndexOp::create(b, l, 0), length,
            arith::ConstantIndexOp::create(b, l, 1), ValueRange{negInf, none},
            [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
              Value v = convert(ib, il, memref::LoadOp::create(ib, il, input, i), f32);
              Value taken = memref::LoadOp::create(ib, il, scratch, i);
              Value first = arith::CmpIOp::create(ib, il, arith::CmpIPredicate::slt, acc[1],
                                                  arith::ConstantIndexOp::create(ib, il, 0));
              Value better = arith::OrIOp::create(
                  ib, il, first,
                  arith::CmpFOp::create(ib, il, arith::CmpFPredicate::OGT, v, acc[0]));
              better = arith::AndIOp::create(
                  ib, il, better,
                  arith::XOrIOp::create(ib, il, taken,
                                        arith::ConstantIntOp::create(ib, il, ib.getI1Type(), 1)));
              scf::YieldOp::create(ib, il,
                                   ValueRange{arith::SelectOp::create(ib, il, better, v, acc[0]),
                                              arith::SelectOp::create(ib, il, better, i, acc[1])});
            });
        memref::StoreOp::create(b, l, loop.getResult(0), result, r);
        memref::StoreOp::create(b, l, arith::ConstantIntOp::create(b, l, b.getI1Type(), 1), scratch,
                                ValueRange{loop.getResult(1)});
      });
  return result;
}

Value KernelEmitter::emitSelect(Value source, Value indexTensor, int64_t axis, Location loc) {
  auto type = cast<MemRefType>(source.getType());
  int64_t rank = type.getRank();
  Value length = dim(source, axis);
  Value raw =
      arith::IndexCastOp::create(builder, loc, builder.getIndexType(), loadScalar(indexTensor));
  Value negative = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, raw, index(0));
  Value at = arith::SelectOp::create(builder, loc, negative,
                                     arith::AddIOp::create(builder, loc, raw, length), raw);
  Value inRange = arith::AndIOp::create(
      builder, loc, arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, at, index(0)),
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, at, length));
  check(inRange,
        "index out of range for dimension " + llvm::Twine(axis) +
            " (an index must lie in [-size, size) of the tokens or features present)",
        loc);
  SmallVector<OpFoldResult> offsets, sizes, strides(rank, builder.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d) {
    offsets.push_back(d == axis ? OpFoldResult(at) : builder.getIndexAttr(0));
    sizes.push_back(d == axis ? OpFoldResult(builder.getIndexAttr(1))
                              : OpFoldResult(dim(source, d)));
  }
  auto reduced = memref::SubViewOp::inferRankReducedResultType(
      SmallVector<int64_t>(rank - 1, ShapedType::kDynamic), type, offsets, sizes, strides);
  return toUniform(memref::SubViewOp::create(builder, loc, cast<MemRefType>(reduced), source,
                                             offsets, sizes, strides));
}

Value KernelEmitter::emitSlice(Value source, int64_t axis, int64_t start,
                               std::optional<int64_t> stop, int64_t stride) {
  Location loc = func.getLoc();
  auto type = cast<MemRefType>(source.getType());
  int64_t rank = type.getRank();
  Value length = dim(source, axis);
  // Python bounds: negative counts from the end, then clamp to [0, length].
  auto clamp = [&](int64_t bound) -> Value {
    Value v = index(bound);
    if (bound < 0)
      v = arith::AddIOp::create(builder, loc, v, length);
    v = arith::MaxSIOp::create(builder, loc, v, index(0));
    return arith::MinSIOp::create(builder, loc, v, length);
  };
  Value first = clamp(start);
  Value last = stop ? clamp(*stop) : length;
  Value span = arith::MaxSIOp::create(builder, loc,
                                      arith::SubIOp::create(builder, loc, last, first), index(0));
  Value count = arith::CeilDivSIOp::create(builder, loc, span, index(stride));
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t d = 0; d < rank; ++d) {
    offsets.push_back(d == axis ? OpFoldResult(first) : builder.getIndexAttr(0));
    sizes.push_back(d == axis ? OpFoldResult(count) : OpFoldResult(dim(source, d)));
    strides.push_back(builder.getIndexAttr(d == axis ? stride : 1));
  }
  return toUniform(memref::SubViewOp::create(builder, loc, source, offsets, sizes, strides));
}

void KernelEmitter::copyInto(Value dest, Value src, Location loc,
                             function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto destType = cast<MemRefType>(dest.getType());
  auto srcType = cast<MemRefType>(src.getType());
  int64_t rank = destType.getRank(), srcRank = srcType.getRank();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(dim(dest, d));
  // A source dimension of size 1 broadcasts; any other size must match.
  SmallVector<Value> srcSizes;
  for (int64_t j = 0; j < srcRank; ++j) {
    Value size = dim(src, j);
    srcSizes.push_back(size);
    Value fits = arith::OrIOp::create(
        builder, loc, arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, size, index(1)),
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, size,
                              sizes[j + rank - srcRank]));
    check(fits, "shape mismatch: the value does not broadcast to its destination", loc);
  }
  Type element = destType.getElementType();
  SmallVector<Value> lower(rank, index(0)), steps(rank, index(1));
  scf::buildLoopNest(
      builder, loc, lower, sizes, steps, [&](OpBuilder &b, Location l, ValueRange ivs) {
        SmallVector<Value> indices;
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value one = arith::ConstantIndexOp::create(b, l, 1);
        for (int64_t j = 0; j < srcRank; ++j) {
          Value broadcast = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, srcSizes[j], one);
          indices.push_back(
              arith::SelectOp::create(b, l, broadcast, zero, ivs[j + rank - srcRank]));
        }
        Value v = convert(b, l, memref::LoadOp::create(b, l, src, indices), element);
        if (combine)
          v = combine(b, l, memref::LoadOp::create(b, l, dest, ivs), v);
        memref::StoreOp::create(b, l, v, dest, ivs);
      });
}

LogicalResult KernelEmitter::emitMath(Operation *op) {
  Value result;
  Type resultElement =
      op->getNumResults() ? getElementTypeOrSelf(op->getResult(0).getType()) : Type();
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return op->emitError("only tensor constants can be lowered in kernels");
    result = emitConstant(dense, op->getLoc());
  } else if (auto b = dyn_cast<nns::BinaryOp>(op)) {
    nns::BinaryKind kind = b.getKind();
    result =
        emitElementwise(op, {b.getLhs(), b.getRhs()}, [&](OpBuilder &ob, Location l, ValueRange s) {
          return binary(ob, l, kind, s[0], s[1], resultElement);
        });
  } else if (auto c = dyn_cast<nns::CompareOp>(op)) {
    nns::CompareKind kind = c.getKind();
    result =
        emitElementwise(op, {c.getLhs(), c.getRhs()}, [&](OpBuilder &ob, Location l, ValueRange s) {
          return compare(ob, l, kind, s[0], s[1]);
        });
  } else if (auto u = dyn_cast<nns::UnaryOp>(op)) {
    nns::UnaryKind kind = u.getKind();
    result = emitElementwise(op, {u.getInput()}, [&](OpBuilder &ob, Location l, ValueRange s) {
      return unary(ob, l, kind, s[0]);
    });
  } else if (auto w = dyn_cast<nns::WhereOp>(op)) {
    result = emitElementwise(op, {w.getCondition(), w.getLhs(), w.getRhs()},
                             [&](OpBuilder &ob, Location l, ValueRange s) {
                               return arith::SelectOp::create(ob, l,
                                                              convert(ob, l, s[0], ob.getI1Type()),
                                                              convert(ob, l, s[1], resultElement),
                                                              convert(ob, l, s[2], resultElement));
                             });
  } else if (auto c = dyn_cast<nns::CastOp>(op)) {
    result = emitElementwise(op, {c.getInput()}, [&](OpBuilder &ob, Location l, ValueRange s) {
      return convert(ob, l, s[0], resultElement);
    });
  } else if (auto bc = dyn_cast<nns::BroadcastOp>(op)) {
    result = emitElementwise(op, {bc.getInput(), bc.getLike()},
                             [&](OpBuilder &ob, Location l, ValueRange s) {
                               return convert(ob, l, s[0], resultElement);
                             });
  } else if (auto r = dyn_cast<nns::ReduceOp>(op)) {
    result = emitReduce(r);
  } else if (auto s = dyn_cast<nns::SoftmaxOp>(op)) {
    result = emitSoftmax(s);
  } else if (auto m = dyn_cast<nns::MatmulOp>(op)) {
    result = emitMatmul(m);
  } else if (auto t = dyn_cast<nns::TopKOp>(op)) {
    if (t.getInput().getType().getRank() != 1)
      return op->emitError("topk is supported on 1-d values in kernels");
    result = emitTopK(t);
  } else if (auto s = dyn_cast<nns::SelectOp>(op)) {
    result = emitSelect(lookup(s.getSource()), lookup(s.getIndex()), s.getDim(), op->getLoc());
  } else if (auto s = dyn_cast<nns::SliceOp>(op)) {
    result = emitSlice(lookup(s.getSource()), s.getDim(), s.getStart(), s.getStop(), s.getStride());
  } else if (isa<nns::SelectScatterOp, nns::SliceScatterOp>(op)) {
    Value dest = lookup(op->getOperand(1));
    // `SITE[i] = v` writes the site's rows in place: the scatter's only use is the write.
    bool inPlace = dest == siteView && op->hasOneUse() &&
                   isa<nns::SiteWriteOp>(*op->getUsers().begin()) && op->getOperand(1).hasOneUse();
    if (!inPlace) {
      auto destType = cast<MemRefType>(dest.getType());
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < destType.getRank(); ++d)
        sizes.push_back(dim(dest, d));
      Value copy = alloc(destType.getElementType(), sizes);
      copyInto(copy, dest, op->getLoc());
      dest = copy;
    }
    Value slot;
    if (auto select = dyn_cast<nns::SelectScatterOp>(op)) {
      slot = emitSelect(dest, lookup(select.getIndex()), select.getDim(), op->getLoc());
    } else {
      auto slice = cast<nns::SliceScatterOp>(op);
      slot = emitSlice(dest, slice.getDim(), slice.getStart(), slice.getStop(), slice.getStride());
    }
    copyInto(slot, lookup(op->getOperand(0)), op->getLoc());
    result = dest;
  } else {
    return op->emitError("cannot lower '") << op->getName() << "' into a kernel";
  }
  values[op->getResult(0)] = result;
  return success();
}

} // namespace nnsc::kernels

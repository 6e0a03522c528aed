//===- Reductions.cpp - reductions, softmax, matmul and topk in kernels ---===//

#include "KernelEmitter.h"
#include "ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace nnsc::kernels {

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

} // namespace nnsc::kernels

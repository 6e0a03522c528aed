//===- ShapeOps.cpp - reshape and transpose in kernels --------------------===//
//
// `nns.reshape` copies the elements in row-major order into a fresh buffer of the new shape
// (the input may be any strided view); `nns.transpose` is a strided view of its input.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace nnsc::kernels {

Value KernelEmitter::emitReshape(nns::ReshapeOp op) {
  Location loc = op.getLoc();
  Value input = lookup(op.getInput());
  RankedTensorType inType = op.getInput().getType(), outType = op.getResult().getType();
  SmallVector<Value> inSizes, inDynamic;
  Value count = index(1);
  for (int64_t d = 0; d < inType.getRank(); ++d) {
    inSizes.push_back(dim(input, d));
    count = arith::MulIOp::create(builder, loc, count, inSizes.back());
    if (inType.isDynamicDim(d))
      inDynamic.push_back(inSizes.back());
  }
  int64_t outDynamic = 0, staticProduct = 1;
  for (int64_t d : outType.getShape()) {
    if (ShapedType::isDynamic(d))
      ++outDynamic;
    else
      staticProduct *= d;
  }
  SmallVector<Value> outSizes;
  size_t nextDynamic = 0;
  for (int64_t d : outType.getShape()) {
    if (!ShapedType::isDynamic(d))
      outSizes.push_back(index(d));
    else if (outDynamic == 1)
      outSizes.push_back(arith::DivUIOp::create(builder, loc, count, index(staticProduct)));
    else
      outSizes.push_back(inDynamic[nextDynamic++]);
  }
  if (outDynamic == 1) {
    Value rem = arith::RemUIOp::create(builder, loc, count, index(staticProduct));
    check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, rem, index(0)),
          "cannot reshape a value of shape " + shapeText(inType) + " to " + shapeText(outType) +
              ": its element count is not a multiple of " + llvm::Twine(staticProduct),
          loc);
  } else if (!inType.hasStaticShape()) {
    Value fits =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, count, index(staticProduct));
    check(fits,
          "cannot reshape a value of shape " + shapeText(inType) + " to " + shapeText(outType),
          loc);
  }
  Value result = alloc(outType.getElementType(), outSizes);
  // One loop over the flat index; both multi-indices come from it by division.
  auto unflatten = [](OpBuilder &b, Location l, Value flat, ArrayRef<Value> sizes) {
    SmallVector<Value> indices(sizes.size());
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
      indices[d] = arith::RemUIOp::create(b, l, flat, sizes[d]);
      flat = arith::DivUIOp::create(b, l, flat, sizes[d]);
    }
    return indices;
  };
  scf::buildLoopNest(builder, loc, ValueRange{index(0)}, ValueRange{count}, ValueRange{index(1)},
                     [&](OpBuilder &b, Location l, ValueRange ivs) {
                       Value v =
                           memref::LoadOp::create(b, l, input, unflatten(b, l, ivs[0], inSizes));
                       memref::StoreOp::create(b, l, v, result, unflatten(b, l, ivs[0], outSizes));
                     });
  return result;
}

Value KernelEmitter::emitTranspose(nns::TransposeOp op) {
  Value input = lookup(op.getInput());
  int64_t rank = op.getInput().getType().getRank();
  SmallVector<unsigned> permutation;
  for (int64_t d = 0; d < rank; ++d)
    permutation.push_back(d);
  std::swap(permutation[op.getDim0()], permutation[op.getDim1()]);
  AffineMap map = AffineMap::getPermutationMap(permutation, builder.getContext());
  return toUniform(
      memref::TransposeOp::create(builder, op.getLoc(), input, AffineMapAttr::get(map)));
}

} // namespace nnsc::kernels

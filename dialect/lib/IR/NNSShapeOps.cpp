//===- NNSShapeOps.cpp - verifiers of the shape ops -------------*- C++ -*-===//
//
// The ops of NNSShapeOps.td (broadcast, select, slice, the scatters, reshape, transpose) and the
// slice type they share with the front end (inferSliceType).
//
//===----------------------------------------------------------------------===//

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "NNSOpsInternal.h"

#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;
using namespace nnsc::nns;

/// Length of a Python slice of a dimension of static size `size`.
static int64_t sliceLength(int64_t size, int64_t start, std::optional<int64_t> stop,
                           int64_t stride) {
  auto clampIndex = [size](int64_t i) {
    if (i < 0)
      i += size;
    return std::clamp<int64_t>(i, 0, size);
  };
  int64_t lo = clampIndex(start), hi = stop ? clampIndex(*stop) : size;
  return hi <= lo ? 0 : (hi - lo + stride - 1) / stride;
}

RankedTensorType nnsc::nns::inferSliceType(RankedTensorType source, int64_t dim, int64_t start,
                                           IntegerAttr stop, int64_t stride) {
  SmallVector<int64_t> shape(source.getShape());
  if (!ShapedType::isDynamic(shape[dim]))
    shape[dim] = sliceLength(shape[dim], start,
                             stop ? std::optional<int64_t>(stop.getInt()) : std::nullopt, stride);
  return RankedTensorType::get(shape, source.getElementType());
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType like = getLike().getType();
  auto expected = RankedTensorType::get(like.getShape(), getInput().getType().getElementType());
  if (getResult().getType() != expected)
    return emitOpError("result type must be ") << expected;
  return verifyBroadcastsTo(*this, getInput().getType(), expected, "input");
}

LogicalResult SelectOp::verify() {
  RankedTensorType source = getSource().getType();
  if (failed(verifyDim(*this, getDimAttr().getInt(), source.getRank())))
    return failure();
  int64_t dim = getDimAttr().getInt();
  int64_t size = source.getShape()[dim];
  APInt index;
  if (!ShapedType::isDynamic(size) && matchPattern(getIndex(), m_ConstantInt(&index))) {
    int64_t i = index.getSExtValue();
    if (i < -size || i >= size)
      return emitOpError("index ")
             << i << " is out of range for dimension " << dim << " of size " << size;
  }
  auto expected =
      RankedTensorType::get(withoutDim(source.getShape(), dim), source.getElementType());
  if (getResult().getType() != expected)
    return emitOpError("result type must be ") << expected;
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType source = getSource().getType();
  if (failed(verifyDim(*this, getDimAttr().getInt(), source.getRank())))
    return failure();
  if (getStrideAttr().getInt() < 1)
    return emitOpError("stride must be positive");
  RankedTensorType expected = inferSliceType(source, getDimAttr().getInt(), getStartAttr().getInt(),
                                             getStopAttr(), getStrideAttr().getInt());
  if (getResult().getType() != expected)
    return emitOpError("result type must be ") << expected;
  return success();
}

LogicalResult SelectScatterOp::verify() {
  RankedTensorType dest = getDest().getType();
  if (failed(verifyDim(*this, getDimAttr().getInt(), dest.getRank())))
    return failure();
  if (getResult().getType() != dest)
    return emitOpError("result type must match the destination type");
  auto slot = RankedTensorType::get(withoutDim(dest.getShape(), getDimAttr().getInt()),
                                    dest.getElementType());
  return verifyBroadcastsTo(*this, getValue().getType(), slot, "value");
}

LogicalResult SliceScatterOp::verify() {
  RankedTensorType dest = getDest().getType();
  if (failed(verifyDim(*this, getDimAttr().getInt(), dest.getRank())))
    return failure();
  if (getStrideAttr().getInt() < 1)
    return emitOpError("stride must be positive");
  if (getResult().getType() != dest)
    return emitOpError("result type must match the destination type");
  RankedTensorType slot = inferSliceType(dest, getDimAttr().getInt(), getStartAttr().getInt(),
                                         getStopAttr(), getStrideAttr().getInt());
  return verifyBroadcastsTo(*this, getValue().getType(), slot, "value");
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("must keep the element type");
  auto staticProduct = [](ArrayRef<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      if (!ShapedType::isDynamic(d))
        n *= d;
    return n;
  };
  auto dynamicCount = [](ArrayRef<int64_t> shape) {
    return llvm::count_if(shape, [](int64_t d) { return ShapedType::isDynamic(d); });
  };
  int64_t inDynamic = dynamicCount(input.getShape()), outDynamic = dynamicCount(result.getShape());
  int64_t inStatic = staticProduct(input.getShape()), outStatic = staticProduct(result.getShape());
  if (inDynamic == 0 && outDynamic == 0) {
    if (inStatic != outStatic)
      return emitOpError("cannot reshape ") << input << " (" << inStatic << " elements) to "
                                            << result << " (" << outStatic << " elements)";
    return success();
  }
  if (outDynamic == 0)
    return emitOpError("result ") << result << " needs a dynamic size to hold " << input;
  if (inDynamic == 0) {
    if (outStatic == 0 || inStatic % outStatic != 0)
      return emitOpError("cannot reshape ") << input << " to " << result;
    return success();
  }
  if (outDynamic > 1 && (outDynamic != inDynamic || inStatic != outStatic))
    return emitOpError("with several dynamic sizes the dynamic sizes must correspond and the "
                       "static sizes have equal products; got ")
           << input << " to " << result;
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t rank = input.getRank(), d0 = getDim0(), d1 = getDim1();
  if (failed(verifyDim(*this, d0, rank)) || failed(verifyDim(*this, d1, rank)))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  std::swap(shape[d0], shape[d1]);
  auto expected = RankedTensorType::get(shape, input.getElementType());
  if (getResult().getType() != expected)
    return emitOpError("result type must be ") << expected;
  return success();
}

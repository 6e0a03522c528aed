//===- NNSOps.cpp - nns dialect operations ----------------------*- C++ -*-===//
//
// Verifiers. They check what the IR itself must satisfy (types, shapes, structure); whether a
// site exists in a given model is the front end's job, against the architecture schema.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "NNSOpsInternal.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace nnsc::nns;

#include "nnsc/Dialect/NNS/NNSEnums.cpp.inc"

LogicalResult nnsc::nns::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                                         SmallVectorImpl<int64_t> &result) {
  size_t rank = std::max(lhs.size(), rhs.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    int64_t &out = result[rank - 1 - i];
    if (a == b || b == 1)
      out = a;
    else if (a == 1)
      out = b;
    else if (ShapedType::isDynamic(a))
      out = b;
    else if (ShapedType::isDynamic(b))
      out = a;
    else
      return failure();
  }
  return success();
}

/// Checks that `value` broadcasts to exactly `target` (a write, a skip, a scatter).
LogicalResult nnsc::nns::verifyBroadcastsTo(Operation *op, RankedTensorType value,
                                            RankedTensorType target, StringRef what) {
  if (value.getElementType() != target.getElementType())
    return op->emitOpError() << what << " has element type " << value.getElementType()
                             << " but the destination has " << target.getElementType();
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(value.getShape(), target.getShape(), shape)) ||
      ArrayRef<int64_t>(shape) != target.getShape())
    return op->emitOpError() << what << " of type " << value << " does not broadcast to " << target;
  return success();
}

/// Checks a canonical site path against its phase.
static LogicalResult verifySitePath(Operation *op, StringRef path, Phase phase, int64_t order) {
  if (order < 0)
    return op->emitOpError("site order must be non-negative");
  auto special = llvm::StringSwitch<std::optional<Phase>>(path)
                     .Case("logits", Phase::Logits)
                     .Case("samples", Phase::Samples)
                     .Case("result", Phase::Result)
                     .Default(std::nullopt);
  if (special) {
    if (*special != phase)
      return op->emitOpError("site '") << path << "' fires in phase '" << stringifyPhase(*special)
                                       << "', not '" << stringifyPhase(phase) << "'";
    return success();
  }
  SmallVector<StringRef> parts;
  path.split(parts, '.');
  if (parts.size() < 2 || llvm::any_of(parts, [](StringRef p) { return p.empty(); }))
    return op->emitOpError("site '")
           << path << "' is not a dotted module path ending in an accessor";
  StringRef accessor = parts.back();
  if (accessor != "output" && accessor != "input" && accessor != "pattern")
    return op->emitOpError("site '") << path << "' has accessor '" << accessor
                                     << "'; expected 'output', 'input' or 'pattern'";
  if (accessor == "pattern" && parts[parts.size() - 2] != "self_attn")
    return op->emitOpError("site '") << path << "': only self-attention modules have a 'pattern'";
  if (phase != Phase::Forward)
    return op->emitOpError("module site '") << path << "' fires in phase 'forward'";
  return success();
}

LogicalResult nnsc::nns::verifyDim(Operation *op, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError("dimension ") << dim << " is out of range for rank " << rank;
  return success();
}

SmallVector<int64_t> nnsc::nns::withoutDim(ArrayRef<int64_t> shape, int64_t dim) {
  SmallVector<int64_t> result(shape);
  result.erase(result.begin() + dim);
  return result;
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  auto type = cast<RankedTensorType>(getParamType());
  if (!type.hasStaticShape())
    return emitOpError("param type ") << type << " must have a static shape";
  if (std::optional<ElementsAttr> init = getDefaultValue())
    if (init->getType() != type)
      return emitOpError("default value of type ")
             << init->getType() << " does not match the param type " << type;
  return success();
}

LogicalResult GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError("'") << getParam() << "' does not name an 'nns.param'";
  if (param.getParamType() != getType())
    return emitOpError("type ") << getType() << " does not match param '" << getParam()
                                << "' of type " << param.getParamType();
  return success();
}

/// Checks that the terminator of `region` yields values of `types`.
static LogicalResult verifyYield(Operation *op, Region &region, TypeRange types) {
  if (region.empty())
    return success();
  auto yield = cast<YieldOp>(region.front().getTerminator());
  if (TypeRange(yield.getValues().getTypes()) != types)
    return op->emitOpError("yields ")
           << yield.getValues().size() << " values whose types do not match its results";
  return success();
}

LogicalResult InvokeOp::verify() {
  int64_t index = 0;
  for (Operation *prev = (*this)->getPrevNode(); prev; prev = prev->getPrevNode())
    index += isa<InvokeOp>(prev);
  if (getIndexAttr().getInt() != index)
    return emitOpError("index ") << getIndexAttr().getInt() << " does not match its position "
                                 << index << " among the trace's invokes";
  return verifyYield(*this, getBody(), getResultTypes());
}

LogicalResult StepsOp::verify() {
  int64_t start = getStartAttr().getInt();
  if (start < 0)
    return emitOpError("start step must be non-negative");
  if (getStrideAttr().getInt() < 1)
    return emitOpError("stride must be positive");
  if (IntegerAttr stop = getStopAttr(); stop && stop.getInt() <= start)
    return emitOpError("stop step ")
           << stop.getInt() << " must be greater than the start step " << start;
  Block &body = getBody().front();
  auto stepType = RankedTensorType::get({}, IntegerType::get(getContext(), 64));
  if (body.getNumArguments() != 1 || body.getArgument(0).getType() != stepType)
    return emitOpError("body must take the step index as one tensor<i64> argument");
  return verifyYield(*this, getBody(), {});
}

LogicalResult IfOp::verify() {
  if (getNumResults() != 0 && getElseRegion().empty())
    return emitOpError("with results needs an else region");
  if (failed(verifyYield(*this, getThenRegion(), getResultTypes())))
    return failure();
  return verifyYield(*this, getElseRegion(), getResultTypes());
}

//===----------------------------------------------------------------------===//
// Sites
//===----------------------------------------------------------------------===//

LogicalResult SiteReadOp::verify() {
  return verifySitePath(*this, getPath(), getPhase(), getOrderAttr().getInt());
}

/// Site writes and in-place updates: a valid site other than 'result', and a value that
/// broadcasts to the site's type.
template <typename OpTy> static LogicalResult verifySiteStore(OpTy op) {
  if (failed(verifySitePath(op, op.getPath(), op.getPhase(), op.getOrderAttr().getInt())))
    return failure();
  if (op.getPhase() == Phase::Result)
    return op.emitOpError("site 'result' is read-only");
  return verifyBroadcastsTo(op, tensorType(op.getValue()), cast<RankedTensorType>(op.getSiteType()),
                            "value");
}

LogicalResult SiteWriteOp::verify() { return verifySiteStore(*this); }

LogicalResult SiteUpdateOp::verify() { return verifySiteStore(*this); }

LogicalResult CacheOp::verify() {
  return verifySitePath(*this, getPath(), getPhase(), getOrderAttr().getInt());
}

LogicalResult SkipOp::verify() {
  if (getModule().empty())
    return emitOpError("module path must not be empty");
  if (getInputOrderAttr().getInt() >= getOutputOrderAttr().getInt())
    return emitOpError("input site order ")
           << getInputOrderAttr().getInt() << " must precede the output site order "
           << getOutputOrderAttr().getInt();
  return verifyBroadcastsTo(*this, tensorType(getValue()), cast<RankedTensorType>(getOutputType()),
                            "value");
}

LogicalResult SaveOp::verify() {
  if (getName().empty())
    return emitOpError("save name must not be empty");
  return success();
}

LogicalResult CallModuleOp::verify() {
  if (getModule().empty())
    return emitOpError("module path must not be empty");
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor math
//===----------------------------------------------------------------------===//

/// Checks the result shape of an elementwise op over `operands`.
static LogicalResult verifyElementwiseShape(Operation *op, ValueRange operands,
                                            RankedTensorType result) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    SmallVector<int64_t> next;
    if (failed(broadcastShapes(shape, tensorType(v).getShape(), next)))
      return op->emitOpError("operand shapes do not broadcast");
    shape = std::move(next);
  }
  if (ArrayRef<int64_t>(shape) != result.getShape())
    return op->emitOpError("result type ") << result << " does not have the broadcast shape";
  return success();
}

LogicalResult BinaryOp::verify() {
  Type elem = getLhs().getType().getElementType();
  if (elem != getRhs().getType().getElementType())
    return emitOpError("operands must have the same element type");
  if (getResult().getType().getElementType() != elem)
    return emitOpError("result element type must match the operands'");
  bool logical = getKind() == BinaryKind::And || getKind() == BinaryKind::Or;
  if (logical != elem.isInteger(1))
    return emitOpError("'") << stringifyBinaryKind(getKind()) << "' "
                            << (logical ? "needs i1 operands" : "does not apply to i1");
  return verifyElementwiseShape(*this, {getLhs(), getRhs()}, getResult().getType());
}

LogicalResult CompareOp::verify() {
  if (getLhs().getType().getElementType() != getRhs().getType().getElementType())
    return emitOpError("operands must have the same element type");
  if (!getResult().getType().getElementType().isInteger(1))
    return emitOpError("result must have element type i1");
  return verifyElementwiseShape(*this, {getLhs(), getRhs()}, getResult().getType());
}

LogicalResult UnaryOp::verify() {
  Type elem = getInput().getType().getElementType();
  switch (getKind()) {
  case UnaryKind::Not:
    if (!elem.isInteger(1))
      return emitOpError("'not' needs an i1 operand");
    return success();
  case UnaryKind::Neg:
  case UnaryKind::Abs:
    if (elem.isInteger(1))
      return emitOpError("'") << stringifyUnaryKind(getKind()) << "' does not apply to i1";
    return success();
  default:
    if (!elem.isF32())
      return emitOpError("'") << stringifyUnaryKind(getKind()) << "' needs an f32 operand";
    return success();
  }
}

LogicalResult ReduceOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyDim(*this, getDimAttr().getInt(), input.getRank())))
    return failure();
  bool isArg = getKind() == ReduceKind::ArgMax || getKind() == ReduceKind::ArgMin;
  bool needsFloat = getKind() == ReduceKind::Mean || getKind() == ReduceKind::Norm;
  if (needsFloat && !input.getElementType().isF32())
    return emitOpError("'") << stringifyReduceKind(getKind()) << "' needs an f32 operand";
  Type elem = isArg ? IntegerType::get(getContext(), 64) : input.getElementType();
  auto expected = RankedTensorType::get(withoutDim(input.getShape(), getDimAttr().getInt()), elem);
  if (getResult().getType() != expected)
    return emitOpError("result type must be ") << expected;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyDim(*this, getDimAttr().getInt(), input.getRank())))
    return failure();
  if (!input.getElementType().isF32())
    return emitOpError("needs an f32 operand");
  return success();
}

LogicalResult MatmulOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  if (!lhs.getElementType().isF32() || !rhs.getElementType().isF32())
    return emitOpError("needs f32 operands");
  if (lhs.getRank() < 1 || lhs.getRank() > 2 || rhs.getRank() < 1 || rhs.getRank() > 2)
    return emitOpError("operands must be 1-D or 2-D");
  int64_t lk = lhs.getShape().back();
  int64_t rk = rhs.getRank() == 1 ? rhs.getShape()[0] : rhs.getShape()[0];
  if (lk != rk && !ShapedType::isDynamic(lk) && !ShapedType::isDynamic(rk))
    return emitOpError("contracted dimensions differ: ") << lk << " and " << rk;
  SmallVector<int64_t> shape;
  if (lhs.getRank() == 2)
    shape.push_back(lhs.getShape()[0]);
  if (rhs.getRank() == 2)
    shape.push_back(rhs.getShape()[1]);
  auto expected = RankedTensorType::get(shape, lhs.getElementType());
  if (getResult().getType() != expected)
    return emitOpError("result type must be ") << expected;
  return success();
}

LogicalResult WhereOp::verify() {
  if (!getCondition().getType().getElementType().isInteger(1))
    return emitOpError("condition must have element type i1");
  Type elem = getLhs().getType().getElementType();
  if (elem != getRhs().getType().getElementType() || elem != getResult().getType().getElementType())
    return emitOpError("values and result must have the same element type");
  return verifyElementwiseShape(*this, {getCondition(), getLhs(), getRhs()}, getResult().getType());
}

LogicalResult TopKOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 1)
    return emitOpError("needs an operand of rank at least 1");
  int64_t k = getKAttr().getInt();
  if (k < 1)
    return emitOpError("k must be positive");
  int64_t last = input.getShape().back();
  if (!ShapedType::isDynamic(last) && k > last)
    return emitOpError("k = ") << k << " exceeds the last dimension " << last;
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = k;
  if (getResult().getType() != RankedTensorType::get(shape, input.getElementType()))
    return emitOpError("result must keep the shape with the last dimension k");
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError("must keep the shape");
  return success();
}

#define GET_OP_CLASSES
#include "nnsc/Dialect/NNS/NNSOps.cpp.inc"

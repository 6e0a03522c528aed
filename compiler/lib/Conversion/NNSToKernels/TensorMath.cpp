//===- TensorMath.cpp - nns tensor math on memrefs with scf loops ---------===//

#include "KernelEmitter.h"
#include "ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace nnsc::kernels {

const char *const kDynamicSizes =
    "a '?' size is known at run time, e.g. the token count: the prompt length at step 0, 1 "
    "after";

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

Value KernelEmitter::emitElementwise(Operation *op, ValueRange inputs,
                                     function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  SmallVector<Value> memrefs;
  for (Value input : inputs)
    memrefs.push_back(lookup(input));
  // NumPy broadcasting with the sizes present: a dynamic size of 1 broadcasts like a static one
  // (a prompt-length value kept from step 0 meets a one-token site at later steps, as in torch).
  // The result size of a dimension is its first size other than 1, else 1.
  auto sizeOf = [&](Value input, Value memref, int64_t j) {
    auto type = cast<RankedTensorType>(input.getType());
    return type.isDynamicDim(j) ? dim(memref, j) : index(type.getDimSize(j));
  };
  auto isOne = [&](Value size) {
    return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, size, index(1))
        .getResult();
  };
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d)) {
      sizes.push_back(index(resultType.getDimSize(d)));
      continue;
    }
    Value size = index(1);
    for (auto [input, memref] : llvm::zip(inputs, memrefs)) {
      auto type = cast<RankedTensorType>(input.getType());
      int64_t j = d - (rank - type.getRank());
      if (j < 0 || type.getDimSize(j) == 1)
        continue;
      size = arith::SelectOp::create(builder, loc, isOne(size), sizeOf(input, memref, j), size);
    }
    sizes.push_back(size);
  }
  std::string shapes;
  for (Value input : inputs)
    shapes += (shapes.empty() ? "" : " and ") + shapeText(input.getType());
  // Which dynamic input dimensions broadcast, decided once per group.
  SmallVector<SmallVector<Value>> broadcasts;
  for (auto [input, memref] : llvm::zip(inputs, memrefs)) {
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<Value> &flags = broadcasts.emplace_back();
    for (int64_t j = 0; j < type.getRank(); ++j) {
      int64_t d = j + rank - type.getRank();
      if (!type.isDynamicDim(j)) {
        flags.push_back({});
        continue;
      }
      Value size = dim(memref, j);
      Value fits = arith::OrIOp::create(
          builder, loc, isOne(size),
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, size, sizes[d]));
      check(fits,
            "shape mismatch: operands of shapes " + shapes + " do not broadcast in dimension " +
                llvm::Twine(d) + " at this step (" + kDynamicSizes + ")",
            loc);
      flags.push_back(isOne(size));
    }
  }
  Value result = alloc(resultType.getElementType(), sizes);
  SmallVector<Value> lower(rank, index(0)), steps(rank, index(1));
  scf::buildLoopNest(builder, loc, lower, sizes, steps,
                     [&](OpBuilder &b, Location l, ValueRange ivs) {
                       SmallVector<Value> scalars;
                       Value zero = arith::ConstantIndexOp::create(b, l, 0);
                       for (auto [input, memref, flags] : llvm::zip(inputs, memrefs, broadcasts)) {
                         auto type = cast<RankedTensorType>(input.getType());
                         SmallVector<Value> indices;
                         for (int64_t j = 0; j < type.getRank(); ++j) {
                           Value iv = ivs[j + rank - type.getRank()];
                           if (type.getDimSize(j) == 1)
                             indices.push_back(zero);
                           else if (flags[j])
                             indices.push_back(arith::SelectOp::create(b, l, flags[j], zero, iv));
                           else
                             indices.push_back(iv);
                         }
                         scalars.push_back(memref::LoadOp::create(b, l, memref, indices));
                       }
                       memref::StoreOp::create(b, l, body(b, l, scalars), result, ivs);
                     });
  return result;
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
  Type i64 = builder.getI64Type();
  check(inRange,
        "index {0} is out of range for dimension " + llvm::Twine(axis) + " of size {1} at site '" +
            kernel.getPath() +
            "' (an index must lie in [-size, size) of the tokens or features present)",
        loc,
        {arith::IndexCastOp::create(builder, loc, i64, raw),
         arith::IndexCastOp::create(builder, loc, i64, length)});
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

std::string shapeText(Type type) {
  auto shaped = cast<ShapedType>(type);
  std::string text = "[";
  for (int64_t d = 0; d < shaped.getRank(); ++d)
    text += (d ? ", " : "") +
            (shaped.isDynamicDim(d) ? std::string("?") : std::to_string(shaped.getDimSize(d)));
  return text + "]";
}

void KernelEmitter::copyInto(Value dest, Value src, Location loc,
                             function_ref<Value(OpBuilder &, Location, Value, Value)> combine,
                             StringRef shapes) {
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
    check(fits,
          "shape mismatch: the value does not broadcast to its destination" +
              (shapes.empty() ? llvm::Twine() : llvm::Twine(" (") + shapes + ")"),
          loc);
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
  } else if (auto r = dyn_cast<nns::ReshapeOp>(op)) {
    result = emitReshape(r);
  } else if (auto t = dyn_cast<nns::TransposeOp>(op)) {
    result = emitTranspose(t);
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

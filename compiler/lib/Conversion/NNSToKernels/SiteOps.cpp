//===- SiteOps.cpp - sites, params, frame slots and callbacks in kernels --===//

#include "KernelEmitter.h"

#include "nnsc/Dialect/NNS/Passes.h"
#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace nnsc::kernels {

static int64_t sitePathOrder(Operation *op) {
  if (auto write = dyn_cast<nns::SiteWriteOp>(op))
    return write.getOrder();
  if (auto update = dyn_cast<nns::SiteUpdateOp>(op))
    return update.getOrder();
  if (auto skip = dyn_cast<nns::SkipOp>(op))
    return skip.getInputOrder();
  return -1;
}

bool KernelEmitter::siteWrittenAfter(Operation *op) const {
  uint64_t site = const_cast<nns::KernelOp &>(kernel).getSite();
  auto it = llvm::find(order, op);
  return std::any_of(it, order.end(), [&](Operation *later) {
    return sitePathOrder(later) == static_cast<int64_t>(site);
  });
}

Value KernelEmitter::emitParam(nns::GetParamOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getValue().getType();
  int32_t which = context.paramIndex.lookup(op.getParam());
  Value param = abi.param(group, which);
  Value ok = abi.hasLayout(param, bundle::dtypeOf(type.getElementType()), type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d)
    ok = arith::AndIOp::create(
        builder, loc, ok,
        arith::CmpIOp::create(
            builder, loc, arith::CmpIPredicate::eq, abi.shape(param, d),
            arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), type.getDimSize(d))));
  check(ok, "param '" + op.getParam() + "' is bound with the wrong dtype or shape", loc);
  return toUniform(abi.view(param, type.getRank(), type.getElementType()));
}

void KernelEmitter::emitSave(Value memref, Type elementType, int64_t saveIndex, Location loc) {
  Value tensor = abi.describe(memref, bundle::dtypeOf(elementType));
  abi.save(request, saveIndex, step, tensor);
}

Value KernelEmitter::emitCallModule(nns::CallModuleOp op) {
  Location loc = op.getLoc();
  Value input = lookup(op.getInput());
  RankedTensorType type = op.getResult().getType();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d) ? dim(input, d) : index(type.getDimSize(d)));
  Value output = alloc(type.getElementType(), sizes);
  int32_t module = context.moduleIndex.lookup(op.getModule());
  Value status = abi.callModule(module, abi.describe(input, abi::DType::F32),
                                abi.describe(output, abi::DType::F32));
  check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, status,
                              arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0)),
        "calling module '" + op.getModule() + "' failed", loc);
  return output;
}

/// Static shapes are stored inline, contiguous; token-dependent ones as {pointer, rows}.
void KernelEmitter::emitFrameStore(nns::FrameStoreOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getValue().getType();
  Value value = lookup(op.getValue());
  Value slot = abi.frameSlot(group, op.getOffset() + 8);
  Type i64 = builder.getI64Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(builder, loc, i64, v).getResult();
  };
  SmallVector<Value> sizes, strides(type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? arith::IndexCastOp::create(builder, loc, i64, dim(value, d)).getResult()
                        : c(type.getDimSize(d)));
  Value stride = c(1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(builder, loc, stride, sizes[d]);
  }
  Value data = slot;
  if (!type.hasStaticShape()) {
    // Replace the previous step's copy: at most one heap copy per slot and request.
    Type ptr = LLVM::LLVMPointerType::get(builder.getContext());
    Value old = LLVM::LoadOp::create(builder, loc, ptr, slot);
    SmallVector<Value> zeros(type.getRank(), c(0)), ones(type.getRank(), c(1));
    memref::DeallocOp::create(builder, loc,
                              abi.pointerView(old, zeros, ones, type.getElementType()));
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamic.push_back(dim(value, d));
    SmallVector<int64_t> shape(type.getShape());
    Value heap = memref::AllocOp::create(builder, loc,
                                         MemRefType::get(shape, type.getElementType()), dynamic);
    Value address = arith::IndexCastOp::create(
        builder, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, heap));
    data = LLVM::IntToPtrOp::create(builder, loc, ptr, address);
    LLVM::StoreOp::create(builder, loc, data, slot);
    // A failed malloc fails the request (the slot holds null). Device code's heap is small: the
    // CUDA context's, 8 MiB unless the runtime raises it.
    Value nonNull = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne, address, c(0));
    Value empty = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, stride, c(0));
    check(arith::OrIOp::create(builder, loc, nonNull, empty),
          "out of heap memory for a value kept for a later site or step", loc);
    // Then each dynamic size, in order (T, and an attention pattern's S).
    int32_t next = 8;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      LLVM::StoreOp::create(builder, loc, sizes[d],
                            LLVM::GEPOp::create(builder, loc, ptr, builder.getI8Type(), slot,
                                                ArrayRef<LLVM::GEPArg>{next}));
      next += 8;
    }
  }
  copyInto(toUniform(abi.pointerView(data, sizes, strides, type.getElementType())), value, loc);
  // Stamp the slot with the step (+1: the zeroed frame means never stored).
  LLVM::StoreOp::create(builder, loc, arith::AddIOp::create(builder, loc, step, c(1)),
                        abi.frameSlot(group, op.getOffset()));
}

Value KernelEmitter::storedStep(nns::FrameLoadOp op) {
  Location loc = op.getLoc();
  Type i64 = builder.getI64Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(builder, loc, i64, v); };
  auto guard = op->getAttrOfType<DenseI64ArrayAttr>(nns::kStoredGuardAttr);
  if (!guard || guard == op->getAttr(nns::kGuardAttr))
    return step;
  // The last step at or before this one that the store's guard admits; loads never run before
  // the guard's first step (the order checks), so `step - start` is not negative.
  int64_t start = guard[0], stop = guard[1], stride = guard[2];
  Value last = step;
  if (stop >= 0)
    last = arith::MinSIOp::create(builder, loc, last, c(stop - 1));
  Value offset = arith::SubIOp::create(builder, loc, last, c(start));
  if (stride > 1)
    offset = arith::MulIOp::create(
        builder, loc, arith::DivSIOp::create(builder, loc, offset, c(stride)), c(stride));
  return arith::AddIOp::create(builder, loc, offset, c(start));
}

Value KernelEmitter::emitFrameLoad(nns::FrameLoadOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getValue().getType();
  Type i64 = builder.getI64Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(builder, loc, i64, v).getResult();
  };
  // A value whose computation failed (or never ran) for this request, e.g. in an earlier invoke
  // of the same kernel call, must not be used as zeros or as a stale step's value.
  Value stamp = LLVM::LoadOp::create(builder, loc, i64, abi.frameSlot(group, op.getOffset()));
  Value expected = arith::AddIOp::create(builder, loc, storedStep(op), c(1));
  auto invoke = op->getAttrOfType<StringAttr>(nns::kStoredInvokeAttr);
  std::string message =
      invoke ? "this value of invoke '" + invoke.getValue().str() +
                   "' was never computed for this request (that invoke failed); its uses are "
                   "skipped"
             : "this value was never computed for this request at this step (an earlier "
               "error); its uses are skipped";
  check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, stamp, expected), message,
        loc);
  Value slot = abi.frameSlot(group, op.getOffset() + 8);
  Value data = slot;
  Type ptr = LLVM::LLVMPointerType::get(builder.getContext());
  if (!type.hasStaticShape())
    data = LLVM::LoadOp::create(builder, loc, ptr, slot);
  SmallVector<Value> sizes, strides(type.getRank());
  int32_t next = 8;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(c(type.getDimSize(d)));
      continue;
    }
    sizes.push_back(LLVM::LoadOp::create(builder, loc, i64,
                                         LLVM::GEPOp::create(builder, loc, ptr, builder.getI8Type(),
                                                             slot, ArrayRef<LLVM::GEPArg>{next})));
    next += 8;
  }
  Value stride = c(1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(builder, loc, stride, sizes[d]);
  }
  return toUniform(abi.pointerView(data, sizes, strides, type.getElementType()));
}

LogicalResult KernelEmitter::emitSiteOp(Operation *op) {
  Location loc = op->getLoc();
  // Present on every save and cache (checked in emitOp), an IntegerAttr (NNSDialect.td).
  auto saveIndex = [&] { return op->getAttrOfType<IntegerAttr>(nns::kSaveIndexAttr).getInt(); };
  if (auto read = dyn_cast<nns::SiteReadOp>(op)) {
    Value view = siteView;
    // Value semantics: a read that a later write of the same site could change is copied,
    // unless it only feeds `SITE[i] = v` (written in place).
    bool feedsOwnWrite = read->hasOneUse() &&
                         isa<nns::SelectScatterOp, nns::SliceScatterOp>(*read->getUsers().begin());
    if (siteWrittenAfter(op) && !feedsOwnWrite) {
      auto type = cast<MemRefType>(view.getType());
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        sizes.push_back(dim(view, d));
      Value copy = alloc(type.getElementType(), sizes);
      copyInto(copy, view, loc);
      view = copy;
    }
    values[read.getValue()] = view;
  } else if (auto write = dyn_cast<nns::SiteWriteOp>(op)) {
    Value value = lookup(write.getValue());
    if (value != siteView)
      copyIntoSite(value, write.getValue().getType(), write.getSiteType(), loc);
  } else if (auto skip = dyn_cast<nns::SkipOp>(op)) {
    copyIntoSite(lookup(skip.getValue()), skip.getValue().getType(), skip.getOutputType(), loc);
    abi.skip(request);
  } else if (auto update = dyn_cast<nns::SiteUpdateOp>(op)) {
    nns::UpdateKind kind = update.getKind();
    copyIntoSite(lookup(update.getValue()), update.getValue().getType(), update.getSiteType(), loc,
                 [&](OpBuilder &b, Location l, Value old, Value v) -> Value {
                   switch (kind) {
                   case nns::UpdateKind::Add:
                     return arith::AddFOp::create(b, l, old, v);
                   case nns::UpdateKind::Sub:
                     return arith::SubFOp::create(b, l, old, v);
                   case nns::UpdateKind::Mul:
                     return arith::MulFOp::create(b, l, old, v);
                   case nns::UpdateKind::Div:
                     return arith::DivFOp::create(b, l, old, v);
                   }
                   llvm_unreachable("unknown update kind");
                 });
  } else if (auto cache = dyn_cast<nns::CacheOp>(op)) {
    emitSave(siteView, siteElementType, saveIndex(), loc);
  } else if (auto save = dyn_cast<nns::SaveOp>(op)) {
    emitSave(lookup(save.getValue()), save.getValue().getType().getElementType(), saveIndex(), loc);
  } else if (isa<nns::StopOp>(op)) {
    abi.stop(request);
  } else if (isa<nns::FinishOp>(op)) {
    abi.finish(request);
  } else {
    return failure();
  }
  return success();
}

void KernelEmitter::copyIntoSite(Value value, Type type, Type siteType, Location loc,
                                 function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  std::string shapes = "value " + shapeText(type) + ", '" + kernel.getPath().str() + "' " +
                       shapeText(siteType) + " at this step; " + kDynamicSizes;
  copyInto(siteView, value, loc, combine, shapes);
}

LogicalResult KernelEmitter::emitOp(Operation *op) {
  if (auto ifOp = dyn_cast<nns::IfOp>(op))
    return emitIf(ifOp);
  if (auto param = dyn_cast<nns::GetParamOp>(op)) {
    values[param.getValue()] = emitParam(param);
    return success();
  }
  if (auto stepOp = dyn_cast<nns::StepOp>(op)) {
    Value buffer = alloc(builder.getI64Type(), {});
    memref::StoreOp::create(builder, op->getLoc(), step, buffer, ValueRange{});
    values[stepOp.getValue()] = buffer;
    return success();
  }
  if (auto call = dyn_cast<nns::CallModuleOp>(op)) {
    values[call.getResult()] = emitCallModule(call);
    return success();
  }
  if (auto store = dyn_cast<nns::FrameStoreOp>(op)) {
    emitFrameStore(store);
    return success();
  }
  if (auto load = dyn_cast<nns::FrameLoadOp>(op)) {
    values[load.getValue()] = emitFrameLoad(load);
    return success();
  }
  if (isa<nns::CacheOp, nns::SaveOp>(op) && !op->hasAttr(nns::kSaveIndexAttr))
    return op->emitError() << "has no '" << nns::kSaveIndexAttr
                           << "' (nns-fuse-sites numbers the trace's saves)";
  if (succeeded(emitSiteOp(op)))
    return success();
  return emitMath(op);
}

} // namespace nnsc::kernels

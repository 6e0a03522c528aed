//===- KernelEmitter.cpp - groups, guards, checks and scopes --------------===//

#include "KernelEmitter.h"

#include "nnsc/Dialect/NNS/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

using namespace mlir;

namespace nnsc::kernels {

MemRefType uniformType(Type elementType, int64_t rank) {
  SmallVector<int64_t> dynamic(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(elementType.getContext(), ShapedType::kDynamic, dynamic);
  return MemRefType::get(dynamic, elementType, layout);
}

/// The tensor type the site has in the program (rows of one sequence).
static RankedTensorType siteType(Operation *op) {
  if (auto read = dyn_cast<nns::SiteReadOp>(op))
    return read.getValue().getType();
  if (auto cache = dyn_cast<nns::CacheOp>(op))
    return cast<RankedTensorType>(cache.getSiteType());
  if (auto write = dyn_cast<nns::SiteWriteOp>(op))
    return cast<RankedTensorType>(write.getSiteType());
  if (auto update = dyn_cast<nns::SiteUpdateOp>(op))
    return cast<RankedTensorType>(update.getSiteType());
  if (auto skip = dyn_cast<nns::SkipOp>(op))
    return cast<RankedTensorType>(skip.getOutputType());
  return {};
}

KernelEmitter::KernelEmitter(OpBuilder &builder, func::FuncOp func, nns::KernelOp kernel,
                             const KernelContext &context)
    : builder(builder), func(func), kernel(kernel), context(context), abi(builder, func) {
  kernel.walk([&](Operation *op) {
    if (op == kernel.getOperation())
      return;
    order.push_back(op);
    if (RankedTensorType type = siteType(op); type && !siteElementType) {
      siteElementType = type.getElementType();
      siteRank = type.getRank();
    }
  });
}

std::string KernelEmitter::where(Location loc) const {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return llvm::formatv("{0}:{1}:{2}: ", file.getFilename().getValue(), file.getLine(),
                         file.getColumn())
        .str();
  return "";
}

Value KernelEmitter::index(int64_t v) {
  return arith::ConstantIndexOp::create(builder, func.getLoc(), v);
}

LogicalResult KernelEmitter::emit() {
  // Runs of consecutive top-level ops with one guard and invoke become one group loop each;
  // recomputed values (no guard) are emitted inside every run that uses them.
  Block &body = kernel.getBody().front();
  SmallVector<Operation *> run;
  Attribute runGuard;
  int64_t runInvoke = -1;
  auto flush = [&]() -> LogicalResult {
    if (run.empty())
      return success();
    LogicalResult result = emitRun(run, runGuard, runInvoke);
    run.clear();
    return result;
  };
  for (Operation &op : body) {
    Attribute guard = op.getAttr(nns::kGuardAttr);
    if (!guard)
      continue;
    auto invokeAttr = op.getAttrOfType<IntegerAttr>(nns::kInvokeAttr);
    int64_t invoke = invokeAttr ? invokeAttr.getInt() : -1;
    if (!run.empty() && (guard != runGuard || invoke != runInvoke) && failed(flush()))
      return failure();
    runGuard = guard;
    runInvoke = invoke;
    run.push_back(&op);
  }
  if (failed(flush()))
    return failure();
  builder.setInsertionPointToEnd(&func.getBody().front());
  abi.returnSuccess();
  return success();
}

Value KernelEmitter::guardCondition(Attribute guard, int64_t invoke) {
  Location loc = func.getLoc();
  Type i64 = builder.getI64Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(builder, loc, i64, v); };
  auto range = cast<DenseI64ArrayAttr>(guard);
  int64_t start = range[0], stop = range[1], stride = range[2];
  Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, step, c(start));
  if (stop >= 0)
    ok = arith::AndIOp::create(
        builder, loc, ok,
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, step, c(stop)));
  if (stride > 1) {
    Value offset = arith::SubIOp::create(builder, loc, step, c(start));
    Value rem = arith::RemSIOp::create(builder, loc, offset, c(stride));
    ok = arith::AndIOp::create(
        builder, loc, ok, arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, rem, c(0)));
  }
  if (invoke >= 0) {
    Value which = abi.load(group, bundle::GroupField::Invoke);
    ok = arith::AndIOp::create(
        builder, loc, ok,
        arith::CmpIOp::create(
            builder, loc, arith::CmpIPredicate::eq, which,
            arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), invoke)));
  }
  return ok;
}

LogicalResult KernelEmitter::emitRun(ArrayRef<Operation *> ops, Attribute guard, int64_t invoke) {
  Location loc = func.getLoc();
  // Site-independent values used by this run, in kernel order. They are the unguarded ops of
  // the kernel body; ops nested in an `nns.if` carry no guard either but run in their branch.
  Block &body = kernel.getBody().front();
  llvm::SetVector<Operation *> used;
  std::function<void(Value)> need = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &body || def->getAttr(nns::kGuardAttr) || used.contains(def))
      return;
    for (Value operand : def->getOperands())
      need(operand);
    used.insert(def);
  };
  for (Operation *op : ops)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        need(operand);
    });
  SmallVector<Operation *> prologue(used.begin(), used.end());
  llvm::sort(prologue, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

  LogicalResult result = success();
  builder.setInsertionPointToEnd(&func.getBody().front());
  scopes.assign(1, {});
  abi.forEachGroup([&](Value g) {
    group = g;
    step = abi.load(group, bundle::GroupField::Step);
    request = abi.load(group, bundle::GroupField::Request);
    auto taken = scf::IfOp::create(builder, loc, guardCondition(guard, invoke));
    builder.setInsertionPoint(taken.thenBlock()->getTerminator());
    failedFlag = alloc(builder.getI1Type(), {});
    memref::StoreOp::create(builder, loc,
                            arith::ConstantIntOp::create(builder, loc, builder.getI1Type(), 0),
                            failedFlag);
    values.clear();
    if (failed(emitSiteView()) || failed(emitBlock(prologue)) || failed(emitBlock(ops)))
      result = failure();
    freeScope();
  });
  return result;
}

LogicalResult KernelEmitter::emitSiteView() {
  Location loc = func.getLoc();
  siteView = nullptr;
  if (!siteElementType)
    return success();
  bool sequenceLevel =
      kernel.getPhase() == nns::Phase::Logits || kernel.getPhase() == nns::Phase::Samples;
  int64_t rank = sequenceLevel ? siteRank + 1 : siteRank;
  abi::DType dtype = siteElementType.isF32() ? abi::DType::F32 : abi::DType::I64;
  Value row = abi.load(group, bundle::GroupField::Row);
  Value rows = abi.load(group, bundle::GroupField::Rows);
  Value value = abi.args().value;
  Value ok = abi.hasLayout(value, dtype, rank);
  check(ok, "internal: the site tensor of '" + kernel.getPath() + "' has the wrong dtype or rank",
        loc);
  check(abi.rowsInBounds(value, row, rows),
        "internal: the rows of a group lie outside the site tensor of '" + kernel.getPath() + "'",
        loc);
  if (kernel.getPath().ends_with(".pattern")) {
    // [tokens, heads, max_context] from the runtime; this sequence's [heads, T, S] with S its
    // context so far: the position of its first row plus its rows.
    Value context =
        arith::AddIOp::create(builder, loc, abi.load(group, bundle::GroupField::Position), rows);
    check(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle, context,
                                abi.shape(value, 2)),
          "internal: the attention pattern of '" + kernel.getPath() +
              "' is narrower than a sequence's context",
          loc);
    siteView = toUniform(abi.patternView(value, row, rows, context, siteElementType));
    return success();
  }
  if (sequenceLevel)
    check(
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, rows,
                              arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), 1)),
        "internal: a sequence-level site group must have one row", loc);
  Value view = abi.rowsView(value, row, rows, rank, siteElementType);
  if (sequenceLevel) {
    auto type = cast<MemRefType>(view.getType());
    SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, strides(rank, builder.getIndexAttr(1));
    sizes.push_back(builder.getIndexAttr(1));
    for (int64_t d = 1; d < rank; ++d)
      sizes.push_back(memref::DimOp::create(builder, loc, view, d).getResult());
    auto reduced = memref::SubViewOp::inferRankReducedResultType(
        SmallVector<int64_t>(siteRank, ShapedType::kDynamic), type, offsets, sizes, strides);
    view = memref::SubViewOp::create(builder, loc, cast<MemRefType>(reduced), view, offsets, sizes,
                                     strides);
  }
  siteView = toUniform(view);
  return success();
}

void KernelEmitter::check(Value ok, const llvm::Twine &message, Location loc, ValueRange args) {
  if (auto constant = ok.getDefiningOp<arith::ConstantIntOp>(); constant && constant.value())
    return;
  auto branch = scf::IfOp::create(builder, loc, ok, /*withElseRegion=*/true);
  builder.setInsertionPoint(branch.elseBlock()->getTerminator());
  std::string text = message.str();
  if (!text.empty())
    abi.reportError(request, where(loc) + text, args);
  memref::StoreOp::create(
      builder, loc, arith::ConstantIntOp::create(builder, loc, builder.getI1Type(), 1), failedFlag);
  freeScope();
  builder.setInsertionPoint(branch.thenBlock()->getTerminator());
}

void KernelEmitter::freeScope() {
  for (Value buffer : scopes.back())
    memref::DeallocOp::create(builder, func.getLoc(), buffer);
}

LogicalResult KernelEmitter::emitBlock(ArrayRef<Operation *> ops) {
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  return success();
}

LogicalResult KernelEmitter::emitIf(nns::IfOp op) {
  Location loc = op.getLoc();
  // Names rebound in a branch (Python semantics: after the `if`, the branch's value when taken,
  // the value from before otherwise). A branch's values live in nested blocks (after its checks)
  // and its buffers are freed at its end, so each branch copies what it yields into storage made
  // before the `if`: a buffer for a static shape, for a dynamic one a heap copy whose address
  // and sizes go to a stack slot (`{address, sizes...}`), freed with the group's buffers.
  SmallVector<Value> results;
  for (Value result : op.getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    if (type.hasStaticShape()) {
      SmallVector<Value> sizes;
      for (int64_t size : type.getShape())
        sizes.push_back(index(size));
      results.push_back(alloc(type.getElementType(), sizes));
      continue;
    }
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&func.getBody().front());
    results.push_back(memref::AllocaOp::create(
        builder, loc, MemRefType::get({type.getRank() + 1}, builder.getIndexType())));
  }
  auto keep = [&](Value result, Value slot, Value value) {
    auto type = cast<RankedTensorType>(result.getType());
    if (type.hasStaticShape()) {
      copyInto(slot, value, loc);
      return;
    }
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(dim(value, d));
    Value copy = alloc(type.getElementType(), sizes, /*tracked=*/false);
    copyInto(copy, value, loc);
    memref::StoreOp::create(builder, loc,
                            memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, copy),
                            slot, ValueRange{index(0)});
    for (int64_t d = 0; d < type.getRank(); ++d)
      memref::StoreOp::create(builder, loc, sizes[d], slot, ValueRange{index(d + 1)});
  };

  Value condition = loadScalar(lookup(op.getCondition()));
  bool hasElse = !op.getElseRegion().empty();
  auto branch = scf::IfOp::create(builder, loc, condition, hasElse);
  for (auto [from, block] : {std::pair{&op.getThenRegion(), branch.thenBlock()},
                             std::pair{&op.getElseRegion(), branch.elseBlock()}}) {
    if (from->empty())
      continue;
    builder.setInsertionPoint(block->getTerminator());
    scopes.emplace_back();
    SmallVector<Operation *> ops;
    for (Operation &nested : from->front().without_terminator())
      ops.push_back(&nested);
    if (failed(emitBlock(ops)))
      return failure();
    auto yield = cast<nns::YieldOp>(from->front().getTerminator());
    for (auto [result, slot, value] : llvm::zip(op.getResults(), results, yield.getValues()))
      keep(result, slot, lookup(value));
    freeScope();
    scopes.pop_back();
  }
  builder.setInsertionPointAfter(branch);
  Value ok = arith::XOrIOp::create(
      builder, loc, memref::LoadOp::create(builder, loc, failedFlag).getResult(),
      arith::ConstantIntOp::create(builder, loc, builder.getI1Type(), 1));
  // Work after a failed branch is skipped; the branch has reported the error already.
  check(ok, "", loc);
  for (auto [result, slot] : llvm::zip(op.getResults(), results)) {
    auto type = cast<RankedTensorType>(result.getType());
    if (type.hasStaticShape()) {
      values[result] = slot;
      continue;
    }
    Type i64 = builder.getI64Type();
    auto load = [&](int64_t i) {
      return arith::IndexCastOp::create(
                 builder, loc, i64,
                 memref::LoadOp::create(builder, loc, slot, ValueRange{index(i)}))
          .getResult();
    };
    Value data = LLVM::IntToPtrOp::create(
        builder, loc, LLVM::LLVMPointerType::get(builder.getContext()), load(0));
    SmallVector<Value> sizes, strides(type.getRank());
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(load(d + 1));
    Value stride = arith::ConstantIntOp::create(builder, loc, i64, 1);
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      strides[d] = stride;
      stride = arith::MulIOp::create(builder, loc, stride, sizes[d]);
    }
    Value view = toUniform(abi.pointerView(data, sizes, strides, type.getElementType()));
    scopes.back().push_back(view);
    values[result] = view;
  }
  return success();
}

} // namespace nnsc::kernels

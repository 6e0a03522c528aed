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

/// A module call at the top level of a run, batched over the run's groups: the group loop up
/// to it leaves each group's input in a heap copy and the values the rest of the run uses in
/// others (site views excepted: the next loop views the site again); after that loop the
/// inputs are stacked into one [rows, in] tensor, the module runs once, and the next loop
/// views each group's rows of the output.
struct KernelEmitter::BatchedCall {
  nns::CallModuleOp call;
  Value reached;               ///< memref<?xi1>: the group got past every check to the call
  Value inputs;                ///< the input copies' addresses and sizes, memref<?x(rank+1)xindex>
  SmallVector<Value> crossing; ///< nns values defined before the call and used after it
  SmallVector<Value> kept;     ///< per crossing value: its copies' table, like `inputs`
  SmallVector<bool> isSite;    ///< per crossing value: a view of the site's rows, not copied
  // Set by emitBatchedCall.
  Value offsets;    ///< memref<?xindex>: each group's first row in the stacked tensors
  Value output;     ///< the stacked output, memref<?x(out)xf32>
  Value outputData; ///< !llvm.ptr to its first element
  Value status;     ///< i32: call_module's result
};

/// The status of a batched call whose stacked tensors could not be allocated (call_module
/// returns 0 or 1).
static constexpr int32_t kOutOfHeap = -1;

/// Whether a top-level module call can run once for all groups: it maps rows (the leading
/// dimensions) to rows, so the stacked input needs a last dimension known at compile time.
static bool batchable(nns::CallModuleOp call) {
  auto in = cast<RankedTensorType>(call.getInput().getType());
  RankedTensorType out = call.getResult().getType();
  return in.getRank() >= 1 && out.getRank() == in.getRank() && !in.isDynamicDim(in.getRank() - 1) &&
         !out.isDynamicDim(out.getRank() - 1) && in.getElementType().isF32() &&
         out.getElementType().isF32();
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

  // The run's segments between its batched module calls: one group loop each. Calls nested in
  // an `if` branch stay in their group's loop (one call per group).
  SmallVector<SmallVector<Operation *>> segments(1);
  SmallVector<nns::CallModuleOp> calls;
  for (Operation *op : ops) {
    auto call = dyn_cast<nns::CallModuleOp>(op);
    if (call && batchable(call)) {
      calls.push_back(call);
      segments.emplace_back();
    } else {
      segments.back().push_back(op);
    }
  }
  SmallVector<BatchedCall> batched(calls.size());
  builder.setInsertionPointToEnd(&func.getBody().front());
  Value numGroups =
      arith::IndexCastOp::create(builder, loc, builder.getIndexType(), abi.args().numGroups);
  Type indexType = builder.getIndexType();
  auto table = [&](int64_t width) {
    return memref::AllocOp::create(builder, loc,
                                   MemRefType::get({ShapedType::kDynamic, width}, indexType),
                                   ValueRange{numGroups});
  };
  SmallVector<Value> runBuffers; // freed after the run's last loop
  for (auto [k, call] : llvm::enumerate(calls)) {
    BatchedCall &b = batched[k];
    b.call = call;
    b.reached = memref::AllocOp::create(
        builder, loc, MemRefType::get({ShapedType::kDynamic}, builder.getI1Type()),
        ValueRange{numGroups});
    b.inputs = table(cast<RankedTensorType>(call.getInput().getType()).getRank() + 1);
    runBuffers.append({b.reached, b.inputs});
    // Values defined in the segments up to this call (or by earlier calls) and used after it.
    llvm::SetVector<Operation *> before;
    for (size_t s = 0; s <= k; ++s)
      before.insert(segments[s].begin(), segments[s].end());
    before.insert(calls.begin(), calls.begin() + k);
    llvm::SetVector<Value> after;
    for (size_t s = k + 1; s < segments.size(); ++s) {
      for (Operation *op : segments[s])
        op->walk([&](Operation *nested) {
          after.insert(nested->operand_begin(), nested->operand_end());
        });
      if (s < calls.size())
        after.insert(calls[s].getInput());
    }
    for (Value v : after) {
      Operation *def = v.getDefiningOp();
      if (!def || !before.contains(def))
        continue;
      b.crossing.push_back(v);
      b.kept.push_back(table(cast<RankedTensorType>(v.getType()).getRank() + 1));
      b.isSite.push_back(false);
      runBuffers.push_back(b.kept.back());
    }
  }

  LogicalResult result = success();
  for (size_t s = 0; s < segments.size(); ++s) {
    BatchedCall *in = s > 0 ? &batched[s - 1] : nullptr;
    BatchedCall *out = s < batched.size() ? &batched[s] : nullptr;
    builder.setInsertionPointToEnd(&func.getBody().front());
    scopes.assign(1, {});
    abi.forEachGroup([&](Value g, Value groupIndex) {
      group = g;
      step = abi.load(group, bundle::GroupField::Step);
      request = abi.load(group, bundle::GroupField::Request);
      Value i1False = arith::ConstantIntOp::create(builder, loc, builder.getI1Type(), 0);
      if (out)
        memref::StoreOp::create(builder, loc, i1False, out->reached, groupIndex);
      Value condition = guardCondition(guard, invoke);
      if (in)
        condition = arith::AndIOp::create(
            builder, loc, condition,
            memref::LoadOp::create(builder, loc, in->reached, groupIndex).getResult());
      auto taken = scf::IfOp::create(builder, loc, condition);
      builder.setInsertionPoint(taken.thenBlock()->getTerminator());
      failedFlag = alloc(builder.getI1Type(), {});
      memref::StoreOp::create(builder, loc, i1False, failedFlag);
      values.clear();
      if (in)
        for (auto [v, kept, isSite] : llvm::zip(in->crossing, in->kept, in->isSite)) {
          if (isSite)
            continue;
          Value view = keptView(kept, groupIndex, cast<RankedTensorType>(v.getType()));
          scopes.back().push_back(view);
          values[v] = view;
        }
      if (failed(emitSiteView()))
        result = failure();
      if (in) {
        for (auto [v, isSite] : llvm::zip(in->crossing, in->isSite))
          if (isSite)
            values[v] = siteView;
        auto status = [&](arith::CmpIPredicate predicate, int32_t value) {
          return arith::CmpIOp::create(
              builder, loc, predicate, in->status,
              arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), value));
        };
        check(status(arith::CmpIPredicate::ne, kOutOfHeap),
              "out of heap memory for the rows of module '" + in->call.getModule() +
                  "' (every group's rows at once)",
              in->call.getLoc());
        check(status(arith::CmpIPredicate::eq, 0),
              "calling module '" + in->call.getModule() + "' failed", in->call.getLoc());
        values[in->call.getResult()] = batchedOutput(*in, groupIndex);
      }
      if (failed(emitBlock(prologue)) || failed(emitBlock(segments[s])))
        result = failure();
      if (out && succeeded(result)) {
        for (auto [i, v] : llvm::enumerate(out->crossing)) {
          Value value = lookup(v);
          out->isSite[i] = value == siteView;
          if (!out->isSite[i])
            keepCopy(value, cast<RankedTensorType>(v.getType()), out->kept[i], groupIndex);
        }
        keepCopy(lookup(out->call.getInput()),
                 cast<RankedTensorType>(out->call.getInput().getType()), out->inputs, groupIndex);
        memref::StoreOp::create(builder, loc,
                                arith::ConstantIntOp::create(builder, loc, builder.getI1Type(), 1),
                                out->reached, groupIndex);
      }
      freeScope();
    });
    if (failed(result))
      return failure();
    if (out) {
      builder.setInsertionPointToEnd(&func.getBody().front());
      emitBatchedCall(*out, numGroups);
      runBuffers.push_back(out->offsets);
    }
  }
  builder.setInsertionPointToEnd(&func.getBody().front());
  for (Value buffer : runBuffers)
    memref::DeallocOp::create(builder, loc, buffer);
  for (BatchedCall &b : batched)
    memref::DeallocOp::create(builder, loc, b.output);
  return success();
}

void KernelEmitter::emitBatchedCall(BatchedCall &b, Value numGroups) {
  Location loc = b.call.getLoc();
  auto inType = cast<RankedTensorType>(b.call.getInput().getType());
  RankedTensorType outType = b.call.getResult().getType();
  int64_t rank = inType.getRank();
  int64_t width = inType.getDimSize(rank - 1), outWidth = outType.getDimSize(rank - 1);
  Type indexType = builder.getIndexType();
  auto entry = [&](Value table, Value groupIndex, int64_t i) {
    return memref::LoadOp::create(builder, loc, table, ValueRange{groupIndex, index(i)})
        .getResult();
  };
  // Each reached group's first row; groups that did not reach the call have none.
  b.offsets = memref::AllocOp::create(
      builder, loc, MemRefType::get({ShapedType::kDynamic}, indexType), ValueRange{numGroups});
  auto count =
      scf::ForOp::create(builder, loc, index(0), numGroups, index(1), ValueRange{index(0)});
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(count.getBody());
    Value g = count.getInductionVar(), total = count.getRegionIterArgs()[0];
    memref::StoreOp::create(builder, loc, total, b.offsets, g);
    Value rows = index(1);
    for (int64_t d = 0; d + 1 < rank; ++d)
      rows = arith::MulIOp::create(builder, loc, rows, entry(b.inputs, g, d + 1));
    Value reached = memref::LoadOp::create(builder, loc, b.reached, g);
    Value next = arith::AddIOp::create(
        builder, loc, total, arith::SelectOp::create(builder, loc, reached, rows, index(0)));
    scf::YieldOp::create(builder, loc, next);
  }
  Value rows = count.getResult(0);
  auto stacked = [&](int64_t columns) {
    return memref::AllocOp::create(
               builder, loc, MemRefType::get({ShapedType::kDynamic, columns}, builder.getF32Type()),
               ValueRange{rows})
        .getResult();
  };
  Value input = stacked(width), output = stacked(outWidth);
  Type ptr = LLVM::LLVMPointerType::get(builder.getContext());
  Type i64 = builder.getI64Type();
  auto address = [&](Value memref) {
    Value base = arith::IndexCastOp::create(
        builder, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref));
    return LLVM::IntToPtrOp::create(builder, loc, ptr, base).getResult();
  };
  auto flat = [&](Value data, Value elements) {
    Value one = arith::ConstantIntOp::create(builder, loc, i64, 1);
    return abi.pointerView(data, {arith::IndexCastOp::create(builder, loc, i64, elements)}, {one},
                           builder.getF32Type());
  };
  // Device code's heap is small (docs/BundleABI.md): a stacked tensor it cannot hold fails the
  // call for every group that reached it.
  Value zero = index(0);
  auto allocated = [&](Value memref) {
    return arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ne,
        memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref), zero);
  };
  Value ready = arith::AndIOp::create(builder, loc, allocated(input), allocated(output));
  // Stack the inputs and free their copies.
  Value inputBase = address(input);
  auto gather = scf::ForOp::create(builder, loc, zero, numGroups, index(1));
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(gather.getBody());
    Value g = gather.getInductionVar();
    auto reached =
        scf::IfOp::create(builder, loc, memref::LoadOp::create(builder, loc, b.reached, g));
    builder.setInsertionPointToStart(reached.thenBlock());
    Value elements = index(width);
    for (int64_t d = 0; d + 1 < rank; ++d)
      elements = arith::MulIOp::create(builder, loc, elements, entry(b.inputs, g, d + 1));
    Value copy =
        flat(LLVM::IntToPtrOp::create(
                 builder, loc, ptr,
                 arith::IndexCastOp::create(builder, loc, i64, entry(b.inputs, g, 0)).getResult()),
             elements);
    auto fits = scf::IfOp::create(builder, loc, ready);
    builder.setInsertionPointToStart(fits.thenBlock());
    Value first = arith::IndexCastOp::create(
        builder, loc, i64,
        arith::MulIOp::create(builder, loc, memref::LoadOp::create(builder, loc, b.offsets, g),
                              index(width)));
    Value dest = flat(LLVM::GEPOp::create(builder, loc, ptr, builder.getF32Type(), inputBase,
                                          ArrayRef<LLVM::GEPArg>{first}),
                      elements);
    auto loop = scf::ForOp::create(builder, loc, zero, elements, index(1));
    builder.setInsertionPointToStart(loop.getBody());
    Value x = memref::LoadOp::create(builder, loc, copy, loop.getInductionVar());
    memref::StoreOp::create(builder, loc, x, dest, loop.getInductionVar());
    builder.setInsertionPointAfter(fits);
    memref::DeallocOp::create(builder, loc, copy);
  }
  // One call for all rows; none when no group reached it.
  Type i32 = builder.getI32Type();
  Value any = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sgt, rows, zero);
  auto call = scf::IfOp::create(builder, loc, TypeRange{i32},
                                arith::AndIOp::create(builder, loc, any, ready),
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(call.thenBlock());
    int32_t module = context.moduleIndex.lookup(b.call.getModule());
    Value status = abi.callModule(module, abi.describe(input, abi::DType::F32),
                                  abi.describe(output, abi::DType::F32));
    scf::YieldOp::create(builder, loc, status);
    builder.setInsertionPointToStart(call.elseBlock());
    Value failed = arith::SelectOp::create(
        builder, loc, any, arith::ConstantIntOp::create(builder, loc, i32, kOutOfHeap),
        arith::ConstantIntOp::create(builder, loc, i32, 0));
    scf::YieldOp::create(builder, loc, failed);
  }
  b.status = call.getResult(0);
  memref::DeallocOp::create(builder, loc, input);
  b.output = output;
  b.outputData = address(output);
}

Value KernelEmitter::batchedOutput(const BatchedCall &b, Value groupIndex) {
  nns::CallModuleOp call = b.call;
  Location loc = call.getLoc();
  RankedTensorType type = call.getResult().getType();
  int64_t rank = type.getRank();
  Type i64 = builder.getI64Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(builder, loc, i64, v).getResult();
  };
  SmallVector<Value> sizes, strides(rank);
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(type.isDynamicDim(d)
                        ? arith::IndexCastOp::create(
                              builder, loc, i64,
                              memref::LoadOp::create(builder, loc, b.inputs,
                                                     ValueRange{groupIndex, index(d + 1)}))
                              .getResult()
                        : c(type.getDimSize(d)));
  Value stride = c(1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(builder, loc, stride, sizes[d]);
  }
  Value first = arith::MulIOp::create(
      builder, loc,
      arith::IndexCastOp::create(builder, loc, i64,
                                 memref::LoadOp::create(builder, loc, b.offsets, groupIndex)),
      c(type.getDimSize(rank - 1)));
  Value data =
      LLVM::GEPOp::create(builder, loc, LLVM::LLVMPointerType::get(builder.getContext()),
                          builder.getF32Type(), b.outputData, ArrayRef<LLVM::GEPArg>{first});
  return toUniform(abi.pointerView(data, sizes, strides, type.getElementType()));
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
    if (type.hasStaticShape())
      copyInto(slot, value, loc);
    else
      keepCopy(value, type, slot, {});
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
    Value view = keptView(slot, {}, type);
    scopes.back().push_back(view);
    values[result] = view;
  }
  return success();
}

void KernelEmitter::keepCopy(Value value, RankedTensorType type, Value slot, ValueRange prefix) {
  Location loc = func.getLoc();
  auto at = [&](int64_t i) {
    SmallVector<Value> indices(prefix);
    indices.push_back(index(i));
    return indices;
  };
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(dim(value, d));
  Value copy = alloc(type.getElementType(), sizes, /*tracked=*/false);
  copyInto(copy, value, loc);
  memref::StoreOp::create(builder, loc,
                          memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, copy), slot,
                          at(0));
  for (int64_t d = 0; d < type.getRank(); ++d)
    memref::StoreOp::create(builder, loc, sizes[d], slot, at(d + 1));
}

Value KernelEmitter::keptView(Value slot, ValueRange prefix, RankedTensorType type) {
  Location loc = func.getLoc();
  Type i64 = builder.getI64Type();
  auto load = [&](int64_t i) {
    SmallVector<Value> indices(prefix);
    indices.push_back(index(i));
    return arith::IndexCastOp::create(builder, loc, i64,
                                      memref::LoadOp::create(builder, loc, slot, indices))
        .getResult();
  };
  Value data = LLVM::IntToPtrOp::create(builder, loc,
                                        LLVM::LLVMPointerType::get(builder.getContext()), load(0));
  SmallVector<Value> sizes, strides(type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(load(d + 1));
  Value stride = arith::ConstantIntOp::create(builder, loc, i64, 1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(builder, loc, stride, sizes[d]);
  }
  return toUniform(abi.pointerView(data, sizes, strides, type.getElementType()));
}

} // namespace nnsc::kernels

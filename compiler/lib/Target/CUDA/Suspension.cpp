//===- Suspension.cpp - device kernels that suspend at module calls -------===//
//
// On the kernel's CFG (after convert-gpu-to-nvvm, so every value has an LLVM type):
//  1. a new entry block takes the arguments, replaces the kernel's allocas with slices of the
//     scratch memory (they must survive between launches, and the host may not address a
//     thread's stack) and dispatches on status.resume;
//  2. each block is split after its module-call recording; the values live into the rest are
//     demoted to stack slots (stored at their definition, loaded at uses in other blocks), so
//     that both the normal path and a resumed one see them through memory and no SSA
//     reconstruction is needed; LLVM's SROA promotes the slots back to registers;
//  3. at the call the kernel copies those slots to scratch, sets status.resume and returns; the
//     resume block copies them back, clears status.resume and continues after the call.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Target/CUDA/Suspension.h"

#include "nnsc/Target/Bundle/ABILayout.h"
#include "nnsc/Target/CUDA/DeviceRuntime.h"

#include "mlir/Analysis/Liveness.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace nnsc::cuda {
namespace {

constexpr int64_t kAlign = 16;

int64_t padded(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

class Suspender {
public:
  explicit Suspender(LLVM::LLVMFuncOp kernel)
      : kernel(kernel), builder(kernel.getContext()), loc(kernel.getLoc()),
        layout(DataLayout::closest(kernel)) {}

  FailureOr<SuspendInfo> run();

private:
  Value constant(Type type, int64_t value) {
    return LLVM::ConstantOp::create(builder, loc, type, value);
  }
  Value byteAddress(Value base, int64_t offset) {
    return LLVM::GEPOp::create(builder, loc, LLVM::LLVMPointerType::get(kernel.getContext()),
                               builder.getI8Type(), base,
                               ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
  }
  LogicalResult moveAllocasToScratch();
  void demote(Value value);

  LLVM::LLVMFuncOp kernel;
  OpBuilder builder;
  Location loc;
  DataLayout layout;
  Block *entry = nullptr;
  Value status, scratch;
  int64_t scratchBytes = 0;
  llvm::MapVector<Value, std::pair<Value, int64_t>> slots; ///< value -> (stack slot, scratch)
};

LogicalResult Suspender::moveAllocasToScratch() {
  SmallVector<LLVM::AllocaOp> allocas;
  kernel.walk([&](LLVM::AllocaOp alloca) { allocas.push_back(alloca); });
  for (LLVM::AllocaOp alloca : allocas) {
    APInt count;
    if (!matchPattern(alloca.getArraySize(), m_ConstantInt(&count)))
      return alloca.emitError() << "kernel '" << kernel.getName()
                                << "' has a stack buffer of run-time size across a module "
                                   "call, which --target=cuda cannot keep between launches";
    int64_t bytes = layout.getTypeSize(alloca.getElemType()).getFixedValue() * count.getSExtValue();
    alloca.replaceAllUsesWith(byteAddress(scratch, scratchBytes));
    alloca.erase();
    scratchBytes += padded(bytes);
  }
  return success();
}

void Suspender::demote(Value value) {
  Block *home = value.getParentBlock();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(entry);
  Value slot = LLVM::AllocaOp::create(builder, loc, LLVM::LLVMPointerType::get(kernel.getContext()),
                                      value.getType(), constant(builder.getI64Type(), 1));
  if (isa<BlockArgument>(value))
    builder.setInsertionPointToStart(home);
  else
    builder.setInsertionPointAfter(value.getDefiningOp());
  Operation *store = LLVM::StoreOp::create(builder, loc, value, slot);
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
    Operation *user = use.getOwner();
    if (user == store || user->getBlock() == home)
      continue;
    builder.setInsertionPoint(user);
    use.set(LLVM::LoadOp::create(builder, loc, value.getType(), slot));
  }
  slots[value] = {slot, scratchBytes};
  scratchBytes += padded(layout.getTypeSize(value.getType()).getFixedValue());
}

FailureOr<SuspendInfo> Suspender::run() {
  SmallVector<LLVM::CallOp> calls;
  kernel.walk([&](LLVM::CallOp call) {
    if (call.getCallee() == kCallModuleFn)
      calls.push_back(call);
  });
  if (calls.empty())
    return SuspendInfo{};

  // 1. The new entry block owns the arguments, the status and scratch pointers.
  Block *oldEntry = &kernel.getBody().front();
  entry = new Block;
  kernel.getBody().push_front(entry);
  for (BlockArgument arg : oldEntry->getArguments())
    arg.replaceAllUsesWith(entry->addArgument(arg.getType(), arg.getLoc()));
  oldEntry->eraseArguments(0, oldEntry->getNumArguments());
  builder.setInsertionPointToEnd(entry);
  Type ptr = LLVM::LLVMPointerType::get(kernel.getContext());
  status = entry->getArgument(3);
  scratch =
      LLVM::LoadOp::create(builder, loc, ptr, byteAddress(status, abi::cuda_status::kScratch));
  if (failed(moveAllocasToScratch()))
    return failure();
  Value resume = LLVM::LoadOp::create(builder, loc, builder.getI32Type(),
                                      byteAddress(status, abi::cuda_status::kResume));
  auto entryBranch = LLVM::BrOp::create(builder, loc, oldEntry);

  // 2. Split after each recording call; liveness on the split CFG gives what crosses it.
  SmallVector<Block *> before, after;
  SmallVector<LLVM::BrOp> joins;
  for (LLVM::CallOp call : calls) {
    Block *block = call->getBlock();
    Block *rest = block->splitBlock(call->getNextNode());
    builder.setInsertionPointToEnd(block);
    joins.push_back(LLVM::BrOp::create(builder, loc, rest));
    before.push_back(block);
    after.push_back(rest);
  }
  Liveness liveness(kernel);
  SmallVector<SmallVector<Value>> live(calls.size());
  llvm::SetVector<Value> toDemote;
  auto definedInEntry = [&](Value v) { return v.getParentBlock() == entry; };
  // Program order, so that the scratch layout is deterministic.
  for (Block &block : kernel.getBody()) {
    auto consider = [&](Value v) {
      if (definedInEntry(v))
        return;
      for (auto [i, rest] : llvm::enumerate(after))
        if (liveness.getLiveIn(rest).contains(v)) {
          live[i].push_back(v);
          toDemote.insert(v);
        }
    };
    for (BlockArgument arg : block.getArguments())
      consider(arg);
    for (Operation &op : block)
      for (Value result : op.getResults())
        consider(result);
  }
  for (Value v : toDemote)
    demote(v);

  // 3. Suspend at each call, resume after it.
  SmallVector<Block *> resumeBlocks;
  SmallVector<int32_t> cases;
  for (auto [i, join] : llvm::enumerate(joins)) {
    builder.setInsertionPoint(join);
    for (Value v : live[i]) {
      auto [slot, offset] = slots[v];
      Value x = LLVM::LoadOp::create(builder, loc, v.getType(), slot);
      LLVM::StoreOp::create(builder, loc, x, byteAddress(scratch, offset));
    }
    LLVM::StoreOp::create(builder, loc, constant(builder.getI32Type(), i + 1),
                          byteAddress(status, abi::cuda_status::kResume));
    LLVM::ReturnOp::create(builder, loc, ValueRange{});
    join.erase();

    Block *resumeBlock = new Block;
    kernel.getBody().push_back(resumeBlock);
    builder.setInsertionPointToEnd(resumeBlock);
    LLVM::StoreOp::create(builder, loc, constant(builder.getI32Type(), 0),
                          byteAddress(status, abi::cuda_status::kResume));
    for (Value v : live[i]) {
      auto [slot, offset] = slots[v];
      Value x = LLVM::LoadOp::create(builder, loc, v.getType(), byteAddress(scratch, offset));
      LLVM::StoreOp::create(builder, loc, x, slot);
    }
    LLVM::BrOp::create(builder, loc, after[i]);
    resumeBlocks.push_back(resumeBlock);
    cases.push_back(i + 1);
  }
  builder.setInsertionPoint(entryBranch);
  SmallVector<ValueRange> caseOperands(cases.size(), ValueRange{});
  LLVM::SwitchOp::create(builder, loc, resume, oldEntry, ValueRange{}, ArrayRef<int32_t>(cases),
                         BlockRange(resumeBlocks), caseOperands);
  entryBranch.erase();
  return SuspendInfo{scratchBytes, static_cast<int32_t>(calls.size())};
}

} // namespace

FailureOr<SuspendInfo> suspendAtModuleCalls(LLVM::LLVMFuncOp kernel) {
  return Suspender(kernel).run();
}

} // namespace nnsc::cuda

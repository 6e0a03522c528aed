//===- DeviceCallbacks.cpp - runtime callbacks as device calls ------------===//

#include "nnsc/Target/CUDA/DeviceCallbacks.h"

#include "nnsc/Target/Bundle/ABILayout.h"
#include "nnsc/Target/CUDA/DeviceRuntime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace nnsc::cuda {

int32_t MessageTable::intern(llvm::StringRef message) {
  auto [it, inserted] = index.try_emplace(message, messages.size());
  if (inserted)
    messages.push_back(message.str());
  return it->second;
}

namespace {

/// The nnsc_runtime offset of the function pointer an indirect call goes through, when it was
/// loaded from the kernel's runtime argument `rt`.
std::optional<int64_t> callbackOffset(LLVM::CallOp call, Value rt) {
  if (call.getCallee())
    return std::nullopt;
  auto load = call.getCalleeOperands().front().getDefiningOp<LLVM::LoadOp>();
  if (!load)
    return std::nullopt;
  Value address = load.getAddr();
  if (address == rt)
    return 0;
  auto gep = address.getDefiningOp<LLVM::GEPOp>();
  if (!gep || gep.getBase() != rt || !gep.getDynamicIndices().empty() ||
      gep.getRawConstantIndices().size() != 1)
    return std::nullopt;
  return gep.getRawConstantIndices().front();
}

/// The text of a report_error message: a constant global of the host module, NUL-terminated.
std::optional<std::string> messageText(Value message, ModuleOp host) {
  auto address = message.getDefiningOp<LLVM::AddressOfOp>();
  if (!address)
    return std::nullopt;
  auto global =
      SymbolTable::lookupNearestSymbolFrom<LLVM::GlobalOp>(host, address.getGlobalNameAttr());
  auto text = global ? dyn_cast_or_null<StringAttr>(global.getValueOrNull()) : nullptr;
  if (!text)
    return std::nullopt;
  return text.getValue().rtrim(llvm::StringRef("\0", 1)).str();
}

} // namespace

LogicalResult rewriteCallbacks(gpu::GPUFuncOp kernel, ModuleOp host, MessageTable &messages) {
  Value rt = kernel.getArgument(3);
  SmallVector<Operation *> calls;
  kernel.walk([&](CallOpInterface call) { calls.push_back(call); });
  for (Operation *op : calls) {
    auto call = dyn_cast<LLVM::CallOp>(op);
    std::optional<int64_t> offset = call ? callbackOffset(call, rt) : std::nullopt;
    auto refuse = [&]() {
      return op->emitError() << "kernel '" << kernel.getName()
                             << "' makes a call that is not a runtime callback, which "
                                "--target=cuda cannot compile: device code cannot reach host "
                                "functions";
    };
    if (!offset)
      return refuse();
    OpBuilder builder(call);
    Location loc = call.getLoc();
    // Operand 0 of every callback is the runtime's ctx, which the device does not have.
    SmallVector<Value> args{rt};
    llvm::append_range(args, call.getArgOperands().drop_front());
    auto device = [&](StringRef name, TypeRange results = {}) {
      return func::CallOp::create(builder, loc, name, results, args);
    };
    switch (*offset) {
    case abi::runtime::kReportError: {
      std::optional<std::string> text = messageText(args[2], host);
      if (!text)
        return call.emitError() << "kernel '" << kernel.getName()
                                << "' reports an error whose message is not a constant string";
      args[2] =
          arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), messages.intern(*text));
      device(kReportErrorFn);
      break;
    }
    case abi::runtime::kSave:
      device(kSaveFn);
      break;
    case abi::runtime::kStop:
      device(kStopFn);
      break;
    case abi::runtime::kFinish:
      device(kFinishFn);
      break;
    case abi::runtime::kSkip:
      device(kSkipFn);
      break;
    case abi::runtime::kCallModule: {
      device(kCallModuleFn);
      args = {rt, args.back()};
      Value status = device(kModuleResultFn, builder.getI32Type()).getResult(0);
      call->getResult(0).replaceAllUsesWith(status);
      break;
    }
    default:
      return refuse();
    }
    call.erase();
  }
  return success();
}

} // namespace nnsc::cuda

//===- CUDATarget.cpp - kernels as PTX ------------------------------------===//

#include "nnsc/Target/CUDA/CUDATarget.h"

#include "nnsc/Pipelines/Pipelines.h"
#include "nnsc/Target/CUDA/DeviceCallbacks.h"
#include "nnsc/Target/CUDA/DeviceRuntime.h"
#include "nnsc/Target/CUDA/Suspension.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace nnsc::cuda {
namespace {

/// A module holding `gpu.module @nnsc_kernels` with one `gpu.func` kernel per distinct kernel
/// of the manifest (same arguments; the i32 status has no host to go to and is dropped, the
/// runtime callbacks become device calls), the device runtime and the globals they use. Null
/// after an error.
OwningOpRef<ModuleOp> buildDeviceModule(ModuleOp module, nns::ManifestAttr manifest,
                                        MessageTable &messages) {
  MLIRContext *context = module.getContext();
  context->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
  Location loc = module.getLoc();
  OwningOpRef<ModuleOp> device = ModuleOp::create(loc);
  (*device)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(context));
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(device->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(builder, loc, "nnsc_kernels");
  builder.setInsertionPointToEnd(gpuModule.getBody());

  for (auto global : module.getOps<LLVM::GlobalOp>())
    builder.clone(*global);
  if (failed(addDeviceRuntime(*gpuModule.getBody(), context)))
    return nullptr;

  llvm::StringSet<> done;
  for (nns::TraceDescAttr trace : manifest.getTraces()) {
    for (nns::SiteEntryAttr site : trace.getSites()) {
      StringRef name = site.getKernel().getValue();
      if (!done.insert(name).second)
        continue;
      auto func =
          cast<func::FuncOp>(SymbolTable::lookupSymbolIn(module, StringAttr::get(context, name)));
      auto type = FunctionType::get(context, func.getArgumentTypes(), {});
      auto kernel = gpu::GPUFuncOp::create(builder, func.getLoc(), name, type);
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(context));
      kernel.getBody().getBlocks().clear();
      IRMapping mapping;
      func.getBody().cloneInto(&kernel.getBody(), mapping);
      kernel.walk([&](func::ReturnOp ret) {
        OpBuilder at(ret);
        gpu::ReturnOp::create(at, ret.getLoc());
        ret.erase();
      });
      if (failed(rewriteCallbacks(kernel, module, messages)))
        return nullptr;
    }
  }
  return device;
}

std::optional<std::string> extractPTX(ModuleOp device) {
  std::optional<std::string> ptx;
  device.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      if (auto attr = dyn_cast<gpu::ObjectAttr>(object))
        ptx = attr.getObject().getValue().str();
  });
  return ptx;
}

} // namespace

OwningOpRef<ModuleOp> lowerDeviceKernels(ModuleOp module, nns::ManifestAttr manifest,
                                         const CUDAOptions &options, bundle::DeviceCode &code) {
  MessageTable messages;
  OwningOpRef<ModuleOp> device = buildDeviceModule(module, manifest, messages);
  if (!device)
    return nullptr;

  PassManager lower(module.getContext());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.optLevel = 3;
  lower.addPass(createGpuNVVMAttachTarget(target));
  buildLowerGPUToNVVMPipeline(lower);
  if (failed(lower.run(*device)))
    return nullptr;

  code.chip = options.chip;
  code.messages = std::move(messages.messages);
  auto gpuModule = *device->getOps<gpu::GPUModuleOp>().begin();
  internalizeDeviceRuntime(gpuModule);
  llvm::StringSet<> done;
  for (nns::TraceDescAttr trace : manifest.getTraces()) {
    for (nns::SiteEntryAttr site : trace.getSites()) {
      StringRef name = site.getKernel().getValue();
      if (!done.insert(name).second)
        continue;
      auto kernel = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(name);
      FailureOr<SuspendInfo> info = suspendAtModuleCalls(kernel);
      if (failed(info))
        return nullptr;
      code.kernels.push_back({name.str(), name.str(), info->scratchBytes, info->numCalls});
    }
  }
  return device;
}

std::optional<bundle::DeviceCode> compileToPTX(ModuleOp module, nns::ManifestAttr manifest,
                                               const CUDAOptions &options) {
  bundle::DeviceCode code;
  OwningOpRef<ModuleOp> device = lowerDeviceKernels(module, manifest, options, code);
  if (!device)
    return std::nullopt;

  llvm::SmallString<128> ptxas(options.toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (llvm::sys::fs::can_execute(ptxas)) {
    OwningOpRef<ModuleOp> check = cast<ModuleOp>((*device)->clone());
    PassManager assemble(module.getContext());
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "bin";
    binary.toolkitPath = options.toolkit;
    assemble.addPass(createGpuModuleToBinaryPass(binary));
    if (failed(assemble.run(*check))) {
      module.emitError() << "ptxas rejected the PTX of the kernels";
      return std::nullopt;
    }
  }

  PassManager serialize(module.getContext());
  GpuModuleToBinaryPassOptions isa;
  isa.compilationTarget = "isa";
  isa.toolkitPath = options.toolkit;
  serialize.addPass(createGpuModuleToBinaryPass(isa));
  if (failed(serialize.run(*device)))
    return std::nullopt;
  std::optional<std::string> ptx = extractPTX(*device);
  if (!ptx) {
    module.emitError() << "gpu-module-to-binary produced no PTX";
    return std::nullopt;
  }
  code.ptx = std::move(*ptx);
  return code;
}

} // namespace nnsc::cuda

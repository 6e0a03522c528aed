//===- BundleEmitter.cpp - kernel-level IR to a bundle --------------------===//

#include "nnsc/Target/Bundle/BundleEmitter.h"

#include "nnsc/Dialect/NNS/Passes.h"
#include "nnsc/Pipelines/Pipelines.h"
#include "nnsc/Target/Bundle/ManifestEmitter.h"
#include "nnsc/Target/CPU/SharedObjectLinker.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

using namespace mlir;

namespace nnsc::bundle {

std::unique_ptr<llvm::Module> buildBundleModule(ModuleOp module, const BundleOptions &options,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine) {
  FailureOr<nns::ManifestAttr> manifest = getManifest(module);
  if (failed(manifest))
    return nullptr;

  std::optional<DeviceCode> device;
  if (options.target == TargetKind::CUDA) {
    device = cuda::compileToPTX(module, *manifest, options.cuda);
    if (!device)
      return nullptr;
  }

  // The manifest is carried into LLVM IR by emitManifest, not by the translation.
  module->removeAttr(nns::kManifestAttr);
  PassManager pm(module.getContext());
  buildLowerToLLVMPipeline(pm);
  if (failed(pm.run(module)))
    return nullptr;

  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "nnsc.bundle");
  if (!llvmModule) {
    module.emitError() << "cannot translate the lowered kernels to LLVM IR";
    return nullptr;
  }
  emitManifest(*llvmModule, *manifest, device ? &*device : nullptr);
  cpu::optimize(*llvmModule, machine, options.cpu.optLevel);
  return llvmModule;
}

static std::unique_ptr<llvm::TargetMachine> targetMachine(ModuleOp module,
                                                          const BundleOptions &options) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = cpu::createTargetMachine(options.cpu, error);
  if (!machine)
    module.emitError() << error;
  return machine;
}

LogicalResult writeBundleLLVMIR(ModuleOp module, const BundleOptions &options,
                                llvm::raw_ostream &os) {
  std::unique_ptr<llvm::TargetMachine> machine = targetMachine(module, options);
  if (!machine)
    return failure();
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule = buildBundleModule(module, options, context, *machine);
  if (!llvmModule)
    return failure();
  llvmModule->print(os, nullptr);
  return success();
}

LogicalResult writeBundle(ModuleOp module, const BundleOptions &options, StringRef outputPath) {
  std::unique_ptr<llvm::TargetMachine> machine = targetMachine(module, options);
  if (!machine)
    return failure();
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule = buildBundleModule(module, options, context, *machine);
  if (!llvmModule)
    return failure();
  llvm::SmallVector<char, 0> object;
  std::string error;
  if (!cpu::emitObject(*llvmModule, *machine, object, error) ||
      !cpu::linkSharedObject(object, outputPath, error))
    return module.emitError() << error;
  return success();
}

} // namespace nnsc::bundle

//===- CPUTarget.cpp - LLVM IR to an optimized host object ----------------===//

#include "nnsc/Target/CPU/CPUTarget.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

namespace nnsc::cpu {

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CPUOptions &options,
                                                         std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;

  std::string cpu = options.cpu;
  std::string features;
  if (cpu.empty() || cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures list;
    for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      list.AddFeature(name, enabled);
    features = list.getString();
  } else {
    std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(triple, cpu, ""));
    if (!info->isCPUStringValid(cpu)) {
      error = "unknown CPU '" + cpu + "' for " + triple.str();
      return nullptr;
    }
  }
  llvm::TargetOptions targetOptions;
  llvm::CodeGenOptLevel level =
      options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive : llvm::CodeGenOptLevel::Default;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt, level));
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine, unsigned optLevel) {
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  // The vectorizer's cost model reads the CPU from each function, not from the machine.
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", machine.getTargetCPU());
    if (!machine.getTargetFeatureString().empty())
      function.addFnAttr("target-features", machine.getTargetFeatureString());
  }

  llvm::LoopAnalysisManager loopAM;
  llvm::FunctionAnalysisManager functionAM;
  llvm::CGSCCAnalysisManager cgsccAM;
  llvm::ModuleAnalysisManager moduleAM;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder passBuilder(&machine, tuning);
  passBuilder.registerModuleAnalyses(moduleAM);
  passBuilder.registerCGSCCAnalyses(cgsccAM);
  passBuilder.registerFunctionAnalyses(functionAM);
  passBuilder.registerLoopAnalyses(loopAM);
  passBuilder.crossRegisterProxies(loopAM, functionAM, cgsccAM, moduleAM);
  llvm::OptimizationLevel level =
      optLevel >= 3 ? llvm::OptimizationLevel::O3 : llvm::OptimizationLevel::O2;
  passBuilder.buildPerModuleDefaultPipeline(level).run(module, moduleAM);
}

bool emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                llvm::SmallVectorImpl<char> &object, std::string &error) {
  llvm::raw_svector_ostream stream(object);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, stream, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target machine cannot emit object files";
    return false;
  }
  codegen.run(module);
  return true;
}

} // namespace nnsc::cpu

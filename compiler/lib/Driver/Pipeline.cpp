//===- Pipeline.cpp - the stages from source to kernel-level IR -----------===//

#include "nnsc/Driver/Pipeline.h"

#include "nnsc/Conversion/Passes.h"
#include "nnsc/Conversion/TargetInfo.h"
#include "nnsc/Dialect/NNS/Passes.h"
#include "nnsc/Frontend/MLIRGen.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

namespace nnsc::driver {

mlir::OwningOpRef<mlir::ModuleOp> generateCheckedIR(ast::Program &program,
                                                    const schema::Architecture &arch,
                                                    mlir::MLIRContext &context,
                                                    std::vector<SaveInfo> *saves) {
  std::vector<SaveInfo> ignored;
  if (mlir::failed(checkProgram(program, arch, context, saves ? *saves : ignored)))
    return nullptr;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlirGen(program, arch, context);
  if (!module || mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

mlir::LogicalResult scheduleModule(mlir::ModuleOp module, const schema::Architecture &arch,
                                   llvm::StringRef source, bool lowerToKernels) {
  if (mlir::failed(kernels::annotateTarget(module, arch, source)))
    return mlir::failure();
  mlir::PassManager pm(module.getContext());
  nns::buildSchedulePipeline(pm);
  if (lowerToKernels)
    pm.addPass(createNNSLowerToKernels());
  return pm.run(module);
}

} // namespace nnsc::driver

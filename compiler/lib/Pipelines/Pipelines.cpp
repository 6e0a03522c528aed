//===- Pipelines.cpp - pass pipelines of the back end ---------------------===//

#include "nnsc/Pipelines/Pipelines.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace nnsc {

/// Strided views become explicit address arithmetic before anything reaches LLVM:
/// expand-strided-metadata leaves affine.apply behind, hence lower-affine right after.
static void addStructuredLowering(OpPassManager &pm) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createSCFToControlFlowPass());
}

void buildLowerToLLVMPipeline(OpPassManager &pm) {
  addStructuredLowering(pm);
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildLowerGPUToNVVMPipeline(OpPassManager &pm) {
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  addStructuredLowering(device);
  device.addPass(createConvertGpuOpsToNVVMOps());
  // convert-gpu-to-nvvm maps float math to libdevice but leaves integer math (math.absi):
  // LLVM's intrinsics for it are native on NVPTX.
  device.addPass(createConvertMathToLLVMPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
}

void registerPipelines() {
  PassPipelineRegistration<>(
      "nns-lower-to-llvm",
      "Lower kernel-level IR (func/scf/cf/arith/math/memref/llvm) to the LLVM dialect",
      buildLowerToLLVMPipeline);
  PassPipelineRegistration<>("nns-lower-gpu-to-nvvm",
                             "Lower the kernels of gpu.module ops to the NVVM dialect",
                             buildLowerGPUToNVVMPipeline);
}

} // namespace nnsc

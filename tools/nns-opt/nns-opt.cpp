//===- nns-opt.cpp - nns dialect optimizer driver ---------------*- C++ -*-===//
//
// mlir-opt with the nns dialect registered, for lit tests of the dialect and its passes.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "nnsc/Conversion/Passes.h"
#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Dialect/NNS/Passes.h"
#include "nnsc/Pipelines/Pipelines.h"
#include "nnsc/Target/Bundle/KernelIR.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<nnsc::nns::NNSDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  nnsc::bundle::registerKernelIRDialects(registry);
  nnsc::registerPipelines();
  nnsc::nns::registerNNSPasses();
  nnsc::registerNNSCConversionPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "nns dialect optimizer driver\n", registry));
}

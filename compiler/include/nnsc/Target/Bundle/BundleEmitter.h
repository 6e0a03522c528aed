//===- BundleEmitter.h - kernel-level IR to a bundle ------------*- C++ -*-===//
//
// The back end's entry points: kernel-level IR (with its `nns.manifest`) to the bundle's LLVM
// IR or to a linked `.nnsb` shared object, for the host CPU and optionally with the kernels'
// PTX embedded.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_BUNDLEEMITTER_H
#define NNSC_TARGET_BUNDLE_BUNDLEEMITTER_H

#include "nnsc/Target/CPU/CPUTarget.h"
#include "nnsc/Target/CUDA/CUDATarget.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

namespace nnsc::bundle {

enum class TargetKind { CPU, CUDA };

struct BundleOptions {
  TargetKind target = TargetKind::CPU;
  cpu::CPUOptions cpu;
  cuda::CUDAOptions cuda;
};

/// Verifies the manifest, compiles the PTX for TargetKind::CUDA, lowers `module` in place with
/// nns-lower-to-llvm, translates it, adds the manifest and `nnsc_bundle_query` and optimizes
/// for `machine`. Returns null after emitting an error.
std::unique_ptr<llvm::Module> buildBundleModule(mlir::ModuleOp module, const BundleOptions &options,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine);

/// `-emit=llvm`: prints the optimized LLVM IR of the bundle.
mlir::LogicalResult writeBundleLLVMIR(mlir::ModuleOp module, const BundleOptions &options,
                                      llvm::raw_ostream &os);

/// `-emit=bundle`: writes the linked shared object to `outputPath`.
mlir::LogicalResult writeBundle(mlir::ModuleOp module, const BundleOptions &options,
                                llvm::StringRef outputPath);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_BUNDLEEMITTER_H

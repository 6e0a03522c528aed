//===- Manifest.h - the bundle manifest of kernel-level IR ------*- C++ -*-===//
//
// Kernel-level IR carries the bundle manifest as the module attribute `nns.manifest`, a
// `#nns.manifest` (dialect/include/nnsc/Dialect/NNS/NNSManifest.td) that verifies itself when
// parsed or built with getChecked. `getManifest` adds the one check an attribute cannot make
// alone, that each site's kernel is a function of the module with the kernel signature; the
// rest of this header translates the manifest's values to the C ABI's.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_MANIFEST_H
#define NNSC_TARGET_BUNDLE_MANIFEST_H

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Target/Bundle/ABILayout.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace nnsc::bundle {

/// The manifest of `module` (`nns.manifest`) once every site's kernel is checked to be a
/// defined function of the kernel signature. Emits an error on `module` and fails otherwise.
mlir::FailureOr<nns::ManifestAttr> getManifest(mlir::ModuleOp module);

/// Whether `func` has the kernel signature `(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32`.
bool hasKernelSignature(mlir::FunctionOpInterface func);

/// The ABI's dtype of an element type the manifest accepts (f32, bf16, f16, i64, i1).
abi::DType dtypeOf(mlir::Type elementType);

/// A manifest shape in the ABI's terms: the token dimension (`?`) is abi::kDimTokens.
llvm::SmallVector<int64_t, 4> abiShape(mlir::RankedTensorType type);

/// The ABI's bit set of a flag list: each flag enum's values are its ABI bits (checked in
/// Manifest.cpp against BundleABI.h).
template <typename Flag> uint32_t abiFlags(llvm::ArrayRef<Flag> flags) {
  uint32_t bits = 0;
  for (Flag flag : flags)
    bits |= static_cast<uint32_t>(flag);
  return bits;
}

/// The ABI's phase of a site.
abi::Phase abiPhase(nns::Phase phase);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_MANIFEST_H

//===- ManifestEmitter.h - the manifest as LLVM constants -------*- C++ -*-===//
//
// Writes the bundle manifest into the bundle's LLVM module as constant globals laid out like
// BundleABI.h's structures (nnsc_bundle, its nnsc_trace_desc[], param/save/site tables, default
// values, strings) and defines the one exported function, `nnsc_bundle_query`.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_MANIFESTEMITTER_H
#define NNSC_TARGET_BUNDLE_MANIFESTEMITTER_H

#include "nnsc/Target/Bundle/DeviceCode.h"
#include "nnsc/Target/Bundle/Manifest.h"

#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Module.h"

namespace nnsc::bundle {

/// The LLVM struct types mirroring the manifest structures of BundleABI.h.
struct ManifestTypes {
  llvm::StructType *paramDesc;
  llvm::StructType *saveDesc;
  llvm::StructType *siteEntry;
  llvm::StructType *traceDesc;
  llvm::StructType *bundle;
  llvm::StructType *cudaKernel;
  llvm::StructType *cudaCode;

  static ManifestTypes get(llvm::LLVMContext &context);
};

/// Emits the manifest globals and `nnsc_bundle_query` into `module`, which must already define
/// every kernel the manifest names; those kernels become internal (the query is the bundle's
/// only export). `device` (--target=cuda) becomes the bundle's nnsc_cuda_code when non-null.
void emitManifest(llvm::Module &module, nns::ManifestAttr manifest, const DeviceCode *device);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_MANIFESTEMITTER_H

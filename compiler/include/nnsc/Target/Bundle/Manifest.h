//===- Manifest.h - the bundle manifest of kernel-level IR ------*- C++ -*-===//
//
// Kernel-level IR carries the bundle manifest as the module attribute `nnsc.manifest`, a
// DictionaryAttr (docs/Compiler.md, "Kernel-level IR"). `parseManifest` is its verifier: it
// reads the attribute into a plain C++ description and reports the first malformed field with
// emitError, naming where it is ("nnsc.manifest: traces[0].params[1].dtype ...").
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_MANIFEST_H
#define NNSC_TARGET_BUNDLE_MANIFEST_H

#include "nnsc/Target/Bundle/ABILayout.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace nnsc::bundle {

/// Name of the module attribute holding the manifest.
constexpr const char *kManifestAttrName = "nnsc.manifest";

struct ParamDesc {
  std::string name;
  abi::DType dtype;
  std::vector<int64_t> shape;
  /// The default value, of `dtype` and `shape`; null when the param is required.
  mlir::DenseElementsAttr defaultValue;
};

struct SaveDesc {
  std::string name;
  abi::DType dtype;
  std::vector<int64_t> shape; ///< may contain abi::kDimTokens
  uint32_t flags;             ///< abi::kSave*
};

struct SiteEntry {
  int32_t site;
  std::string path;
  abi::Phase phase;
  uint32_t access;    ///< abi::kAccess*
  std::string kernel; ///< symbol of a func.func in the module
};

struct TraceDesc {
  std::string name;
  int32_t numInvokes;
  std::vector<std::string> invokeNames;
  uint32_t flags; ///< abi::kTrace*
  int64_t frameBytes;
  std::vector<int64_t> frameHeapSlots; ///< offsets of heap pointers in the frame
  std::vector<ParamDesc> params;
  std::vector<SaveDesc> saves;
  std::vector<SiteEntry> sites; ///< sorted by `site`
};

struct Manifest {
  std::string sourceHash;
  std::string arch;
  uint64_t schemaHash;
  int64_t hidden, intermediate, layers, heads, kvHeads, headDim, vocab;
  std::vector<TraceDesc> traces;
};

/// Reads and verifies the `nnsc.manifest` attribute of `module`, including that every kernel
/// symbol names a func.func of the kernel signature. Emits an error on `module` and returns
/// nullopt when anything is missing or malformed.
std::optional<Manifest> parseManifest(mlir::ModuleOp module);

/// Whether `func` has the kernel signature `(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32`.
bool hasKernelSignature(mlir::FunctionOpInterface func);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_MANIFEST_H

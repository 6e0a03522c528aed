//===- ManifestReader.h - walks nnsc.manifest, naming fields ----*- C++ -*-===//
//
// Internal to the bundle target: Manifest.cpp reads the tables (params, saves, sites, traces),
// ManifestFields.cpp the typed fields they are made of.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_MANIFESTREADER_H
#define NNSC_TARGET_BUNDLE_MANIFESTREADER_H

#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace nnsc::bundle {

/// Walks the manifest dictionary, remembering where it is so that every error names the field
/// ("traces[1].sites[0].kernel").
class ManifestReader {
public:
  explicit ManifestReader(mlir::ModuleOp module) : module(module) {}

  std::optional<Manifest> read(mlir::DictionaryAttr root);

private:
  /// Emits "nnsc.manifest: PATH: message" on the module.
  mlir::InFlightDiagnostic error(const llvm::Twine &where) {
    return module.emitError() << kManifestAttrName << ": " << where << ": ";
  }

  mlir::Attribute require(mlir::DictionaryAttr dict, const std::string &prefix,
                          llvm::StringRef key);
  std::optional<std::string> getString(mlir::DictionaryAttr dict, const std::string &prefix,
                                       llvm::StringRef key);
  std::optional<int64_t> getInt(mlir::DictionaryAttr dict, const std::string &prefix,
                                llvm::StringRef key, int64_t min);
  std::optional<mlir::ArrayAttr> getArray(mlir::DictionaryAttr dict, const std::string &prefix,
                                          llvm::StringRef key);
  /// The frame's heap-pointer offsets: ascending, 8-aligned, inside `frameBytes`.
  std::optional<std::vector<int64_t>>
  getFrameHeapSlots(mlir::DictionaryAttr dict, const std::string &prefix, int64_t frameBytes);
  std::optional<mlir::DictionaryAttr> asDict(mlir::Attribute attr, const std::string &where);
  std::optional<abi::DType> getDType(mlir::DictionaryAttr dict, const std::string &prefix);
  std::optional<std::vector<int64_t>> getShape(mlir::DictionaryAttr dict, const std::string &prefix,
                                               bool allowTokens);
  std::optional<uint32_t> getFlags(mlir::DictionaryAttr dict, const std::string &prefix,
                                   llvm::StringRef key,
                                   llvm::ArrayRef<std::pair<llvm::StringRef, uint32_t>> names);
  std::optional<ParamDesc> readParam(mlir::Attribute attr, const std::string &where);
  std::optional<SaveDesc> readSave(mlir::Attribute attr, const std::string &where);
  std::optional<SiteEntry> readSite(mlir::Attribute attr, const std::string &where);
  std::optional<TraceDesc> readTrace(mlir::Attribute attr, const std::string &where);

  mlir::ModuleOp module;
};

/// "prefix.key", or "key" at the top level.
std::string field(const std::string &prefix, llvm::StringRef key);

/// "prefix.key[index]".
std::string element(const std::string &prefix, llvm::StringRef key, size_t index);

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_MANIFESTREADER_H

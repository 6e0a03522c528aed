//===- ManifestFields.cpp - typed fields of nnsc.manifest -----------------===//

#include "ManifestReader.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace nnsc::bundle {

std::string field(const std::string &prefix, StringRef key) {
  return prefix.empty() ? key.str() : prefix + "." + key.str();
}

std::string element(const std::string &prefix, StringRef key, size_t index) {
  return llvm::formatv("{0}[{1}]", field(prefix, key), index).str();
}

Attribute ManifestReader::require(DictionaryAttr dict, const std::string &prefix, StringRef key) {
  Attribute attr = dict.get(key);
  if (!attr)
    error(field(prefix, key)) << "missing";
  return attr;
}

std::optional<std::string> ManifestReader::getString(DictionaryAttr dict, const std::string &prefix,
                                                     StringRef key) {
  Attribute attr = require(dict, prefix, key);
  if (!attr)
    return std::nullopt;
  auto str = dyn_cast<StringAttr>(attr);
  if (!str) {
    error(field(prefix, key)) << "expected a string, got " << attr;
    return std::nullopt;
  }
  return str.getValue().str();
}

std::optional<int64_t> ManifestReader::getInt(DictionaryAttr dict, const std::string &prefix,
                                              StringRef key, int64_t min) {
  Attribute attr = require(dict, prefix, key);
  if (!attr)
    return std::nullopt;
  auto integer = dyn_cast<IntegerAttr>(attr);
  if (!integer || !integer.getType().isSignlessInteger()) {
    error(field(prefix, key)) << "expected a signless integer, got " << attr;
    return std::nullopt;
  }
  int64_t value = integer.getInt();
  if (value < min) {
    error(field(prefix, key)) << "must be at least " << min << ", got " << value;
    return std::nullopt;
  }
  return value;
}

std::optional<ArrayAttr> ManifestReader::getArray(DictionaryAttr dict, const std::string &prefix,
                                                  StringRef key) {
  Attribute attr = require(dict, prefix, key);
  if (!attr)
    return std::nullopt;
  auto array = dyn_cast<ArrayAttr>(attr);
  if (!array) {
    error(field(prefix, key)) << "expected an array, got " << attr;
    return std::nullopt;
  }
  return array;
}

std::optional<std::vector<int64_t>> ManifestReader::getFrameHeapSlots(DictionaryAttr dict,
                                                                      const std::string &prefix,
                                                                      int64_t frameBytes) {
  Attribute attr = require(dict, prefix, "frame_heap_slots");
  if (!attr)
    return std::nullopt;
  auto offsets = dyn_cast<DenseI64ArrayAttr>(attr);
  if (!offsets) {
    error(field(prefix, "frame_heap_slots")) << "expected array<i64: ...>, got " << attr;
    return std::nullopt;
  }
  ArrayRef<int64_t> slots = offsets.asArrayRef();
  for (auto [index, offset] : llvm::enumerate(slots)) {
    auto bad = [&] { return error(field(prefix, "frame_heap_slots")) << "offset " << offset; };
    if (offset % 8 != 0) {
      bad() << " is not 8-aligned";
      return std::nullopt;
    }
    if (offset < 0 || offset > frameBytes - 8) {
      bad() << " is not a pointer inside the frame of " << frameBytes << " bytes";
      return std::nullopt;
    }
    if (index > 0 && offset <= slots[index - 1]) {
      bad() << " follows " << slots[index - 1] << " (offsets ascend)";
      return std::nullopt;
    }
  }
  return std::vector<int64_t>(offsets.asArrayRef());
}

std::optional<DictionaryAttr> ManifestReader::asDict(Attribute attr, const std::string &where) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict) {
    error(where) << "expected a dictionary, got " << attr;
    return std::nullopt;
  }
  return dict;
}

std::optional<abi::DType> ManifestReader::getDType(DictionaryAttr dict, const std::string &prefix) {
  std::optional<std::string> name = getString(dict, prefix, "dtype");
  if (!name)
    return std::nullopt;
  std::optional<abi::DType> dtype = llvm::StringSwitch<std::optional<abi::DType>>(*name)
                                        .Case("f32", abi::DType::F32)
                                        .Case("bf16", abi::DType::BF16)
                                        .Case("f16", abi::DType::F16)
                                        .Case("i64", abi::DType::I64)
                                        .Case("bool", abi::DType::Bool)
                                        .Default(std::nullopt);
  if (!dtype)
    error(field(prefix, "dtype")) << "unknown dtype '" << *name
                                  << "' (expected f32, bf16, f16, i64 or bool)";
  return dtype;
}

std::optional<std::vector<int64_t>>
ManifestReader::getShape(DictionaryAttr dict, const std::string &prefix, bool allowTokens) {
  Attribute attr = require(dict, prefix, "shape");
  if (!attr)
    return std::nullopt;
  auto dims = dyn_cast<DenseI64ArrayAttr>(attr);
  if (!dims) {
    error(field(prefix, "shape")) << "expected array<i64: ...>, got " << attr;
    return std::nullopt;
  }
  if (dims.size() > abi::kMaxRank) {
    error(field(prefix, "shape")) << "rank " << dims.size() << " exceeds the ABI's maximum of "
                                  << abi::kMaxRank;
    return std::nullopt;
  }
  for (int64_t dim : dims.asArrayRef()) {
    if (dim > 0 || (allowTokens && dim == abi::kDimTokens))
      continue;
    error(field(prefix, "shape")) << "invalid dimension " << dim
                                  << (allowTokens ? " (expected > 0 or -1 for the tokens)"
                                                  : " (expected > 0)");
    return std::nullopt;
  }
  return std::vector<int64_t>(dims.asArrayRef());
}

std::optional<uint32_t>
ManifestReader::getFlags(DictionaryAttr dict, const std::string &prefix, StringRef key,
                         llvm::ArrayRef<std::pair<StringRef, uint32_t>> names) {
  std::optional<ArrayAttr> array = getArray(dict, prefix, key);
  if (!array)
    return std::nullopt;
  uint32_t flags = 0;
  for (auto [index, attr] : llvm::enumerate(*array)) {
    auto name = dyn_cast<StringAttr>(attr);
    const auto *it =
        name ? llvm::find_if(names, [&](auto &entry) { return entry.first == name.getValue(); })
             : names.end();
    if (it == names.end()) {
      InFlightDiagnostic diag = error(element(prefix, key, index));
      diag << "unknown flag " << attr << " (expected one of";
      for (auto &entry : names)
        diag << " '" << entry.first << "'";
      diag << ")";
      return std::nullopt;
    }
    flags |= it->second;
  }
  return flags;
}

} // namespace nnsc::bundle

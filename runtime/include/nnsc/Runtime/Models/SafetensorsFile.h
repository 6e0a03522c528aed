//===- SafetensorsFile.h - Hugging Face safetensors reader ------*- C++ -*-===//
//
// A bounds-checked reader of the safetensors format: an 8-byte little-endian header length,
// a JSON header mapping tensor names to {dtype, shape, data_offsets}, then the data. The file
// is memory-mapped; every malformed input is rejected with an error naming the file and what
// is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_SAFETENSORSFILE_H
#define NNSC_RUNTIME_MODELS_SAFETENSORSFILE_H

#include "nnsc/Support/MappedFile.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nnsc {

/// One tensor of a safetensors file.
struct SafetensorInfo {
  std::string name;
  /// The header's dtype string ("F32", "BF16", "I64", ...).
  std::string dtype;
  std::vector<int64_t> shape;
  /// Bytes of the tensor inside the mapped file.
  const uint8_t *data = nullptr;
  uint64_t size = 0;

  int64_t numElements() const;
};

/// A memory-mapped .safetensors file.
class SafetensorsFile {
public:
  /// Opens and validates `path`; on failure returns null and sets `error`.
  static std::unique_ptr<SafetensorsFile> open(const std::string &path, std::string &error);
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return filePath; }
  const std::map<std::string, SafetensorInfo, std::less<>> &tensors() const { return infos; }
  const SafetensorInfo *find(std::string_view name) const;

private:
  SafetensorsFile() = default;

  std::string filePath;
  std::map<std::string, SafetensorInfo, std::less<>> infos;
  MappedFile mapped;
};

/// Bytes per element of a safetensors dtype, or 0 for an unknown one.
int64_t safetensorsDtypeSize(std::string_view dtype);

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_SAFETENSORSFILE_H

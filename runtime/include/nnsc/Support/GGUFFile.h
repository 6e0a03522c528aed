//===- GGUFFile.h - GGUF v2/v3 reader ---------------------------*- C++ -*-===//
//
// A dependency-free, bounds-checked reader of GGUF model files (metadata and tensor directory,
// with the tensor data memory-mapped). Used by the compiler (model config for static checks)
// and the runtime (weights, tokenizer). Every malformed input is reported through the `error`
// out-parameter naming what is wrong and where; nothing is read outside the file.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SUPPORT_GGUFFILE_H
#define NNSC_SUPPORT_GGUFFILE_H

#include "nnsc/Support/MappedFile.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace nnsc::gguf {

/// ggml tensor element types (the numbering of ggml.h). Only the ones we name are loadable;
/// others still parse so that the error can say which type a tensor has.
enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

/// "F32", "Q4_1", ... or "type N" for a number ggml does not define.
std::string tensorTypeName(uint32_t type);

/// Elements per block and bytes per block of a type; nullopt if the type is unknown.
struct BlockLayout {
  int64_t elementsPerBlock;
  int64_t bytesPerBlock;
};
std::optional<BlockLayout> blockLayout(uint32_t type);

/// A metadata value. Integers of every width and bools are widened to int64_t (uint64 values
/// above INT64_MAX are rejected as corrupt), floats to double.
using Array = std::variant<std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;
using Value = std::variant<int64_t, double, std::string, Array>;

struct TensorInfo {
  std::string name;
  /// ggml order: dims[0] is the fastest-varying (innermost) dimension.
  std::vector<int64_t> dims;
  uint32_t type;
  /// Byte offset from the start of the data section, and size in bytes.
  uint64_t offset;
  uint64_t size;

  int64_t numElements() const;
};

class GGUFFile {
public:
  /// Opens and validates `path`. On failure returns null and sets `error` to a message that
  /// names the file and what is wrong with it.
  static std::unique_ptr<GGUFFile> open(const std::string &path, std::string &error);
  GGUFFile(const GGUFFile &) = delete;
  GGUFFile &operator=(const GGUFFile &) = delete;

  const std::string &path() const { return filePath; }
  uint32_t version() const { return formatVersion; }

  const Value *find(std::string_view key) const;
  std::optional<int64_t> getInt(std::string_view key) const;
  std::optional<double> getFloat(std::string_view key) const; // also accepts integers
  std::optional<std::string> getString(std::string_view key) const;
  const std::vector<std::string> *getStringArray(std::string_view key) const;
  const std::vector<int64_t> *getIntArray(std::string_view key) const;
  const std::vector<double> *getFloatArray(std::string_view key) const;
  const std::map<std::string, Value, std::less<>> &metadata() const { return entries; }

  const std::vector<TensorInfo> &tensors() const { return tensorInfos; }
  const TensorInfo *findTensor(std::string_view name) const;
  /// The tensor's bytes inside the mapped file (valid while this object lives).
  const uint8_t *tensorData(const TensorInfo &info) const { return dataStart + info.offset; }
  /// MappedFile::release of the tensor's bytes, once a reader has copied them.
  void releaseTensorData(const TensorInfo &info) const {
    mapped.release(size_t(dataStart - mapped.data()) + info.offset, info.size);
  }

private:
  GGUFFile() = default;

  std::string filePath;
  uint32_t formatVersion = 0;
  std::map<std::string, Value, std::less<>> entries;
  std::vector<TensorInfo> tensorInfos;
  std::map<std::string, size_t, std::less<>> tensorByName;
  MappedFile mapped;
  const uint8_t *dataStart = nullptr;
};

} // namespace nnsc::gguf

#endif // NNSC_SUPPORT_GGUFFILE_H

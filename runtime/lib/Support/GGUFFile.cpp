//===- GGUFFile.cpp - GGUF v2/v3 reader -------------------------*- C++ -*-===//

#include "nnsc/Support/GGUFFile.h"

#include <cstring>
#include <limits>

namespace nnsc::gguf {

std::string tensorTypeName(uint32_t type) {
  switch (static_cast<TensorType>(type)) {
  case TensorType::F32:
    return "F32";
  case TensorType::F16:
    return "F16";
  case TensorType::Q4_0:
    return "Q4_0";
  case TensorType::Q4_1:
    return "Q4_1";
  case TensorType::Q5_0:
    return "Q5_0";
  case TensorType::Q5_1:
    return "Q5_1";
  case TensorType::Q8_0:
    return "Q8_0";
  case TensorType::Q8_1:
    return "Q8_1";
  case TensorType::Q2_K:
    return "Q2_K";
  case TensorType::Q3_K:
    return "Q3_K";
  case TensorType::Q4_K:
    return "Q4_K";
  case TensorType::Q5_K:
    return "Q5_K";
  case TensorType::Q6_K:
    return "Q6_K";
  case TensorType::Q8_K:
    return "Q8_K";
  case TensorType::IQ4_NL:
    return "IQ4_NL";
  case TensorType::IQ4_XS:
    return "IQ4_XS";
  case TensorType::I8:
    return "I8";
  case TensorType::I16:
    return "I16";
  case TensorType::I32:
    return "I32";
  case TensorType::I64:
    return "I64";
  case TensorType::F64:
    return "F64";
  case TensorType::BF16:
    return "BF16";
  }
  return "type " + std::to_string(type);
}

std::optional<BlockLayout> blockLayout(uint32_t type) {
  switch (static_cast<TensorType>(type)) {
  case TensorType::F32:
    return BlockLayout{1, 4};
  case TensorType::F16:
  case TensorType::BF16:
    return BlockLayout{1, 2};
  case TensorType::F64:
    return BlockLayout{1, 8};
  case TensorType::I8:
    return BlockLayout{1, 1};
  case TensorType::I16:
    return BlockLayout{1, 2};
  case TensorType::I32:
    return BlockLayout{1, 4};
  case TensorType::I64:
    return BlockLayout{1, 8};
  case TensorType::Q4_0:
    return BlockLayout{32, 2 + 16};
  case TensorType::Q4_1:
    return BlockLayout{32, 2 + 2 + 16};
  case TensorType::Q5_0:
    return BlockLayout{32, 2 + 4 + 16};
  case TensorType::Q5_1:
    return BlockLayout{32, 2 + 2 + 4 + 16};
  case TensorType::Q8_0:
    return BlockLayout{32, 2 + 32};
  case TensorType::Q8_1:
    return BlockLayout{32, 4 + 4 + 32};
  case TensorType::Q2_K:
    return BlockLayout{256, 256 / 16 + 256 / 4 + 2 + 2};
  case TensorType::Q3_K:
    return BlockLayout{256, 256 / 8 + 256 / 4 + 12 + 2};
  case TensorType::Q4_K:
    return BlockLayout{256, 2 + 2 + 12 + 256 / 2};
  case TensorType::Q5_K:
    return BlockLayout{256, 2 + 2 + 12 + 256 / 8 + 256 / 2};
  case TensorType::Q6_K:
    return BlockLayout{256, 256 / 2 + 256 / 4 + 256 / 16 + 2};
  case TensorType::Q8_K:
    return BlockLayout{256, 4 + 256 + 256 / 16 * 2};
  case TensorType::IQ4_NL:
    return BlockLayout{32, 2 + 16};
  case TensorType::IQ4_XS:
    return BlockLayout{256, 2 + 2 + 256 / 64 + 256 / 2};
  }
  return std::nullopt;
}

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

namespace {

constexpr uint32_t kMagic = 0x46554747; // "GGUF" little-endian
constexpr uint64_t kMaxArrayLength = uint64_t(1) << 32;
constexpr uint32_t kMaxDims = 4;

enum ValueType : uint32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kUInt16 = 2,
  kInt16 = 3,
  kUInt32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUInt64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// Sequential bounds-checked reads from the mapped file. The first failure is sticky and
/// recorded with the offset where it happened.
class Cursor {
public:
  Cursor(const uint8_t *data, size_t size) : data(data), size(size) {}

  bool ok() const { return error.empty(); }
  size_t offset() const { return pos; }
  size_t remaining() const { return size - pos; }
  const std::string &message() const { return error; }

  void fail(const std::string &what) {
    if (ok())
      error = what + " at byte " + std::to_string(pos);
  }

  template <typename T> T read() {
    T value{};
    if (!ok())
      return value;
    if (size - pos < sizeof(T)) {
      fail("unexpected end of file");
      return value;
    }
    std::memcpy(&value, data + pos, sizeof(T));
    pos += sizeof(T);
    return value;
  }

  std::string readString() {
    uint64_t length = read<uint64_t>();
    if (!ok())
      return {};
    if (length > size - pos) {
      fail("string of " + std::to_string(length) + " bytes runs past the end of the file");
      return {};
    }
    std::string s(reinterpret_cast<const char *>(data + pos), length);
    pos += length;
    return s;
  }

private:
  const uint8_t *data;
  size_t size;
  size_t pos = 0;
  std::string error;
};

std::optional<int64_t> readInteger(Cursor &c, uint32_t type) {
  switch (type) {
  case kUInt8:
    return c.read<uint8_t>();
  case kInt8:
    return c.read<int8_t>();
  case kUInt16:
    return c.read<uint16_t>();
  case kInt16:
    return c.read<int16_t>();
  case kUInt32:
    return c.read<uint32_t>();
  case kInt32:
    return c.read<int32_t>();
  case kBool:
    return c.read<uint8_t>() != 0;
  case kInt64:
    return c.read<int64_t>();
  case kUInt64: {
    uint64_t v = c.read<uint64_t>();
    if (v > uint64_t(std::numeric_limits<int64_t>::max())) {
      c.fail("uint64 value " + std::to_string(v) + " out of range");
      return std::nullopt;
    }
    return int64_t(v);
  }
  default:
    return std::nullopt;
  }
}

std::optional<double> readFloating(Cursor &c, uint32_t type) {
  if (type == kFloat32)
    return c.read<float>();
  if (type == kFloat64)
    return c.read<double>();
  return std::nullopt;
}

std::optional<Value> readValue(Cursor &c, uint32_t type, bool inArray = false) {
  if (auto i = readInteger(c, type))
    return Value(*i);
  if (auto f = readFloating(c, type))
    return Value(*f);
  if (type == kString)
    return Value(c.readString());
  if (type != kArray || inArray) {
    c.fail("invalid metadata value type " + std::to_string(type));
    return std::nullopt;
  }
  uint32_t elemType = c.read<uint32_t>();
  uint64_t count = c.read<uint64_t>();
  if (!c.ok())
    return std::nullopt;
  // Every element takes at least one byte (a string at least its 8-byte length), so a count
  // beyond what is left of the file is corrupt; checking it first keeps reserve() bounded.
  uint64_t minElementSize = elemType == kString ? 8 : 1;
  if (count > kMaxArrayLength || count > c.remaining() / minElementSize) {
    c.fail("array of " + std::to_string(count) + " elements does not fit in the file");
    return std::nullopt;
  }
  if (elemType == kString) {
    std::vector<std::string> out;
    out.reserve(count);
    for (uint64_t i = 0; i < count && c.ok(); ++i)
      out.push_back(c.readString());
    return Value(Array(std::move(out)));
  }
  if (elemType == kFloat32 || elemType == kFloat64) {
    std::vector<double> out;
    out.reserve(count);
    for (uint64_t i = 0; i < count && c.ok(); ++i)
      out.push_back(elemType == kFloat32 ? c.read<float>() : c.read<double>());
    return Value(Array(std::move(out)));
  }
  std::vector<int64_t> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count && c.ok(); ++i) {
    auto v = readInteger(c, elemType);
    if (!v) {
      c.fail("invalid array element type " + std::to_string(elemType));
      return std::nullopt;
    }
    out.push_back(*v);
  }
  return Value(Array(std::move(out)));
}

} // namespace

std::unique_ptr<GGUFFile> GGUFFile::open(const std::string &path, std::string &error) {
  auto fail = [&](const std::string &what) -> std::unique_ptr<GGUFFile> {
    error = "'" + path + "': " + what;
    return nullptr;
  };
  std::unique_ptr<GGUFFile> file(new GGUFFile());
  std::string mapError;
  if (!file->mapped.open(path, mapError))
    return fail(mapError);
  const size_t fileSize = file->mapped.size();
  if (fileSize < 24)
    return fail("not a GGUF file (only " + std::to_string(fileSize) + " bytes)");
  file->filePath = path;
  const uint8_t *bytes = file->mapped.data();
  Cursor c(bytes, fileSize);

  if (c.read<uint32_t>() != kMagic)
    return fail("not a GGUF file (bad magic)");
  file->formatVersion = c.read<uint32_t>();
  if (file->formatVersion != 2 && file->formatVersion != 3)
    return fail("unsupported GGUF version " + std::to_string(file->formatVersion) +
                " (supported: 2, 3)");
  uint64_t tensorCount = c.read<uint64_t>();
  uint64_t kvCount = c.read<uint64_t>();
  // Each entry takes at least 8 bytes: anything larger than the file is corrupt.
  if (tensorCount > fileSize / 8 || kvCount > fileSize / 8)
    return fail("corrupt header: " + std::to_string(tensorCount) + " tensors, " +
                std::to_string(kvCount) + " metadata entries");

  for (uint64_t i = 0; i < kvCount && c.ok(); ++i) {
    std::string key = c.readString();
    uint32_t type = c.read<uint32_t>();
    if (!c.ok())
      break;
    std::optional<Value> value = readValue(c, type);
    if (!value) {
      c.fail("metadata '" + key + "'");
      break;
    }
    file->entries[key] = std::move(*value);
  }
  if (!c.ok())
    return fail("corrupt metadata: " + c.message());

  for (uint64_t i = 0; i < tensorCount && c.ok(); ++i) {
    TensorInfo info;
    info.name = c.readString();
    uint32_t nDims = c.read<uint32_t>();
    if (!c.ok())
      break;
    if (nDims == 0 || nDims > kMaxDims)
      return fail("tensor '" + info.name + "' has " + std::to_string(nDims) + " dimensions");
    constexpr uint64_t kMaxElements = uint64_t(1) << 40;
    uint64_t elements = 1;
    for (uint32_t d = 0; d < nDims; ++d) {
      uint64_t dim = c.read<uint64_t>();
      if (dim == 0 || dim > kMaxElements / elements)
        return fail("tensor '" + info.name + "' has invalid dimension " + std::to_string(dim));
      elements *= dim;
      info.dims.push_back(int64_t(dim));
    }
    info.type = c.read<uint32_t>();
    info.offset = c.read<uint64_t>();
    if (!c.ok())
      break;
    auto layout = blockLayout(info.type);
    if (!layout)
      return fail("tensor '" + info.name + "' has unknown type " + std::to_string(info.type));
    int64_t n = info.numElements();
    if (info.dims[0] % layout->elementsPerBlock != 0)
      return fail("tensor '" + info.name + "' has a shape that does not fit type " +
                  tensorTypeName(info.type));
    info.size = uint64_t(n / layout->elementsPerBlock) * uint64_t(layout->bytesPerBlock);
    if (file->tensorByName.count(info.name))
      return fail("duplicate tensor '" + info.name + "'");
    file->tensorByName[info.name] = file->tensorInfos.size();
    file->tensorInfos.push_back(std::move(info));
  }
  if (!c.ok())
    return fail("corrupt tensor directory: " + c.message());

  int64_t alignment = file->getInt("general.alignment").value_or(32);
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    return fail("invalid general.alignment " + std::to_string(alignment));
  size_t dataOffset = (c.offset() + size_t(alignment) - 1) / size_t(alignment) * size_t(alignment);
  if (dataOffset > fileSize)
    return fail("truncated before the tensor data");
  size_t dataSize = fileSize - dataOffset;
  for (const TensorInfo &info : file->tensorInfos) {
    if (info.offset % uint64_t(alignment) != 0)
      return fail("tensor '" + info.name + "' data is not aligned to " + std::to_string(alignment));
    if (info.offset > dataSize || info.size > dataSize - info.offset)
      return fail("truncated: tensor '" + info.name + "' needs bytes up to " +
                  std::to_string(dataOffset + info.offset + info.size) + " of a " +
                  std::to_string(fileSize) + "-byte file");
  }
  file->dataStart = bytes + dataOffset;
  return file;
}

const Value *GGUFFile::find(std::string_view key) const {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}

std::optional<int64_t> GGUFFile::getInt(std::string_view key) const {
  const Value *v = find(key);
  if (v && std::holds_alternative<int64_t>(*v))
    return std::get<int64_t>(*v);
  return std::nullopt;
}

std::optional<double> GGUFFile::getFloat(std::string_view key) const {
  const Value *v = find(key);
  if (!v)
    return std::nullopt;
  if (std::holds_alternative<double>(*v))
    return std::get<double>(*v);
  if (std::holds_alternative<int64_t>(*v))
    return double(std::get<int64_t>(*v));
  return std::nullopt;
}

std::optional<std::string> GGUFFile::getString(std::string_view key) const {
  const Value *v = find(key);
  if (v && std::holds_alternative<std::string>(*v))
    return std::get<std::string>(*v);
  return std::nullopt;
}

template <typename T> static const T *getArray(const GGUFFile &file, std::string_view key) {
  const Value *v = file.find(key);
  if (!v || !std::holds_alternative<Array>(*v))
    return nullptr;
  return std::get_if<T>(&std::get<Array>(*v));
}

const std::vector<std::string> *GGUFFile::getStringArray(std::string_view key) const {
  return getArray<std::vector<std::string>>(*this, key);
}

const std::vector<int64_t> *GGUFFile::getIntArray(std::string_view key) const {
  return getArray<std::vector<int64_t>>(*this, key);
}

const std::vector<double> *GGUFFile::getFloatArray(std::string_view key) const {
  return getArray<std::vector<double>>(*this, key);
}

const TensorInfo *GGUFFile::findTensor(std::string_view name) const {
  auto it = tensorByName.find(name);
  return it == tensorByName.end() ? nullptr : &tensorInfos[it->second];
}

} // namespace nnsc::gguf

//===- SafetensorsFile.cpp - Hugging Face safetensors reader ----*- C++ -*-===//

#include "nnsc/Runtime/Models/SafetensorsFile.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <limits>

namespace nnsc {

int64_t SafetensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t safetensorsDtypeSize(std::string_view dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return 0;
}

const SafetensorInfo *SafetensorsFile::find(std::string_view name) const {
  auto it = infos.find(name);
  return it == infos.end() ? nullptr : &it->second;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path,
                                                       std::string &error) {
  auto fail = [&](const std::string &what) -> std::unique_ptr<SafetensorsFile> {
    error = "'" + path + "': " + what;
    return nullptr;
  };
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  std::string mapError;
  if (!file->mapped.open(path, mapError))
    return fail(mapError);
  const size_t fileSize = file->mapped.size();
  if (fileSize < 8)
    return fail("truncated safetensors file (" + std::to_string(fileSize) +
                " bytes, the header length alone takes 8)");
  file->filePath = path;
  const uint8_t *bytes = file->mapped.data();

  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | bytes[i];
  if (headerLen > fileSize - 8)
    return fail("truncated safetensors file: header of " + std::to_string(headerLen) +
                " bytes does not fit in the remaining " + std::to_string(fileSize - 8));
  const char *headerText = reinterpret_cast<const char *>(bytes + 8);
  nlohmann::json header = nlohmann::json::parse(headerText, headerText + headerLen, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return fail("corrupt safetensors header: not a JSON object");

  const uint8_t *dataStart = bytes + 8 + headerLen;
  const uint64_t dataSize = fileSize - 8 - headerLen;
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &what) {
      return fail("corrupt safetensors header: tensor '" + name + "' " + what);
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      return bad("needs 'dtype', 'shape' and two 'data_offsets'");
    SafetensorInfo info;
    info.name = name;
    info.dtype = entry["dtype"].get<std::string>();
    const int64_t elementSize = safetensorsDtypeSize(info.dtype);
    if (elementSize == 0)
      return bad("has unknown dtype '" + info.dtype + "'");
    // The byte count of the shape, computed without overflow: a product of the non-zero
    // dimensions past INT64_MAX bytes is no real tensor (even with a zero dimension, so that
    // numElements() never overflows); a zero dimension makes the tensor empty.
    uint64_t bytes = uint64_t(elementSize);
    bool zero = false, tooLarge = false;
    for (const auto &d : entry["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
        return bad("has a shape entry that is not a non-negative integer");
      const uint64_t dim = d.get<uint64_t>();
      info.shape.push_back(int64_t(dim));
      if (dim == 0)
        zero = true;
      else if (bytes > uint64_t(INT64_MAX) / dim)
        tooLarge = true;
      else
        bytes *= dim;
    }
    if (tooLarge)
      return bad("has an impossible shape (more than 2^63 bytes)");
    if (zero)
      bytes = 0;
    const auto &offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      return bad("has non-integer data_offsets");
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > dataSize)
      return bad("has data [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") outside the " + std::to_string(dataSize) + "-byte data section (truncated?)");
    if (bytes != end - begin)
      return bad("has " + std::to_string(end - begin) + " bytes of data, its shape needs " +
                 std::to_string(bytes));
    info.data = dataStart + begin;
    info.size = end - begin;
    file->infos.emplace(name, std::move(info));
  }
  return file;
}

} // namespace nnsc

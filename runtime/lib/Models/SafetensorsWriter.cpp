//===- SafetensorsWriter.cpp - write tensors as safetensors -----*- C++ -*-===//

#include "nnsc/Runtime/Models/SafetensorsWriter.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace nnsc {

namespace {

const char *dtypeName(torch::ScalarType t) {
  switch (t) {
  case torch::kFloat32:
    return "F32";
  case torch::kBFloat16:
    return "BF16";
  case torch::kFloat16:
    return "F16";
  case torch::kInt64:
    return "I64";
  case torch::kInt32:
    return "I32";
  case torch::kBool:
    return "BOOL";
  default:
    return nullptr;
  }
}

/// The file's first part (8-byte little-endian header length, then the JSON header padded
/// to 8 bytes) and the contiguous CPU tensors whose bytes follow it, in order.
std::pair<std::string, std::vector<torch::Tensor>>
layout(const std::map<std::string, torch::Tensor> &tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    const char *dtype = dtypeName(tensor.scalar_type());
    if (!dtype)
      throw std::runtime_error("cannot write tensor '" + name + "' of dtype " +
                               c10::toString(tensor.scalar_type()) + " as safetensors");
    torch::Tensor t = tensor.contiguous().cpu();
    uint64_t bytes = uint64_t(t.numel()) * t.element_size();
    header[name] = {
        {"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(t);
  }
  std::string text = header.dump();
  // Pad the header with spaces so the data starts 8-byte aligned, as safetensors does.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i)
    prefix[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  return {prefix + text, std::move(data)};
}

size_t bytesOf(const torch::Tensor &t) { return size_t(t.numel()) * t.element_size(); }

} // namespace

void writeSafetensors(const std::string &path,
                      const std::map<std::string, torch::Tensor> &tensors) {
  auto [head, data] = layout(tensors);
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw std::runtime_error("cannot write '" + path + "'");
  out.write(head.data(), std::streamsize(head.size()));
  for (const torch::Tensor &t : data)
    out.write(static_cast<const char *>(t.data_ptr()), std::streamsize(bytesOf(t)));
  if (!out)
    throw std::runtime_error("error writing '" + path + "'");
}

std::string serializeSafetensors(const std::map<std::string, torch::Tensor> &tensors) {
  auto [bytes, data] = layout(tensors);
  for (const torch::Tensor &t : data)
    bytes.append(static_cast<const char *>(t.data_ptr()), bytesOf(t));
  return bytes;
}

} // namespace nnsc

//===- SafetensorsWeights.cpp - weights from a Hugging Face dir -*- C++ -*-===//

#include "nnsc/Runtime/Models/SafetensorsWeights.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace nnsc {

namespace fs = std::filesystem;

SafetensorsWeightSource::SafetensorsWeightSource(const std::string &dir) : dir(dir) {
  std::set<std::string> names;
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream in(index);
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw ModelLoadError("'" + index.string() + "': not a safetensors index (no 'weight_map')");
    for (const auto &[tensor, file] : j["weight_map"].items())
      if (file.is_string())
        names.insert(file.get<std::string>());
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    names.insert("model.safetensors");
  } else {
    throw ModelLoadError("'" + dir + "': no model.safetensors or model.safetensors.index.json");
  }
  for (const std::string &name : names) {
    std::string error;
    std::unique_ptr<SafetensorsFile> file =
        SafetensorsFile::open((fs::path(dir) / name).string(), error);
    if (!file)
      throw ModelLoadError(error);
    files.push_back(std::move(file));
  }
}

int64_t SafetensorsWeightSource::size() const {
  int64_t n = 0;
  for (const auto &f : files)
    n += int64_t(f->tensors().size());
  return n;
}

torch::Tensor SafetensorsWeightSource::get(const std::string &hfName,
                                           const std::vector<int64_t> &shape,
                                           torch::ScalarType dtype, bool optional) {
  const SafetensorInfo *info = nullptr;
  const SafetensorsFile *owner = nullptr;
  for (const auto &f : files)
    if ((info = f->find(hfName))) {
      owner = f.get();
      break;
    }
  if (!info) {
    if (optional)
      return {};
    throw ModelLoadError("'" + dir + "': missing tensor '" + hfName + "'");
  }
  if (info->shape != shape)
    throw ModelLoadError("'" + owner->path() + "': tensor '" + hfName + "' has shape " +
                         formatShape(info->shape) + ", expected " + formatShape(shape));
  torch::ScalarType stored;
  if (info->dtype == "F32")
    stored = torch::kFloat32;
  else if (info->dtype == "F16")
    stored = torch::kFloat16;
  else if (info->dtype == "BF16")
    stored = torch::kBFloat16;
  else
    throw ModelLoadError("'" + owner->path() + "': tensor '" + hfName + "' has dtype " +
                         info->dtype + ", which is not supported (supported: F32, F16, BF16)");
  // from_blob over the mapping (which may be unaligned for the dtype), copied out at once.
  torch::Tensor raw =
      torch::from_blob(const_cast<uint8_t *>(info->data), {int64_t(info->size)}, torch::kUInt8)
          .clone();
  return raw.view(stored).reshape(shape).to(dtype).contiguous();
}

} // namespace nnsc

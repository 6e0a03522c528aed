//===- TensorJson.h - tensors in JSON request and response bodies -*- C++ -*-===//
//
// How nns-serve carries tensors in JSON (docs/Server.md): a save goes out as
// {"dtype": "float32", "shape": [...], "data": BASE64} (little-endian, row-major; dtype is
// torch's name, so `getattr(torch, dtype)` finds it); a param comes in as a number, a bool,
// nested lists, or that same object for tensors too big to spell out.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_TENSORJSON_H
#define NNSC_SERVER_TENSORJSON_H

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <optional>
#include <string>
#include <string_view>

namespace nnsc::server {

std::string base64Encode(std::string_view bytes);
/// Nullopt for text that is not standard base64 (padding optional).
std::optional<std::string> base64Decode(std::string_view text);

/// {"dtype", "shape", "data"} of a CPU tensor.
nlohmann::json tensorToJson(const torch::Tensor &tensor);

/// The tensor a param value describes, or nullopt with `error` saying what is wrong with it
/// (prefixed by nothing: the caller names the param). At most `maxBytes` of tensor data.
std::optional<torch::Tensor> tensorFromJson(const nlohmann::json &value, size_t maxBytes,
                                            std::string &error);

} // namespace nnsc::server

#endif // NNSC_SERVER_TENSORJSON_H

//===- TensorJson.cpp - tensors in JSON request and response bodies -------===//

#include "nnsc/Server/TensorJson.h"

#include <array>
#include <cstring>
#include <map>

namespace nnsc::server {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// torch's dtype names and the short and safetensors spellings people also write.
std::optional<torch::ScalarType> parseDtype(const std::string &name) {
  static const std::map<std::string, torch::ScalarType> names = {
      {"float32", torch::kFloat32}, {"float", torch::kFloat32},     {"f32", torch::kFloat32},
      {"F32", torch::kFloat32},     {"float64", torch::kFloat64},   {"f64", torch::kFloat64},
      {"F64", torch::kFloat64},     {"bfloat16", torch::kBFloat16}, {"bf16", torch::kBFloat16},
      {"BF16", torch::kBFloat16},   {"float16", torch::kFloat16},   {"f16", torch::kFloat16},
      {"F16", torch::kFloat16},     {"int64", torch::kInt64},       {"i64", torch::kInt64},
      {"I64", torch::kInt64},       {"int32", torch::kInt32},       {"i32", torch::kInt32},
      {"I32", torch::kInt32},       {"bool", torch::kBool},         {"BOOL", torch::kBool}};
  auto it = names.find(name);
  return it == names.end() ? std::nullopt : std::optional(it->second);
}

const char *torchName(torch::ScalarType t) {
  switch (t) {
  case torch::kFloat32:
    return "float32";
  case torch::kFloat64:
    return "float64";
  case torch::kBFloat16:
    return "bfloat16";
  case torch::kFloat16:
    return "float16";
  case torch::kInt64:
    return "int64";
  case torch::kInt32:
    return "int32";
  case torch::kBool:
    return "bool";
  default:
    return "unknown";
  }
}

/// Flattens nested lists of numbers and bools into `values`, checking they are rectangular;
/// `shape` receives the nesting sizes.
bool flatten(const nlohmann::json &v, size_t depth, std::vector<int64_t> &shape,
             std::vector<double> &values, size_t maxValues, std::string &error) {
  if (v.is_array()) {
    if (depth == shape.size())
      shape.push_back(int64_t(v.size()));
    else if (shape[depth] != int64_t(v.size())) {
      error = "nested lists are not rectangular (a list of " + std::to_string(v.size()) +
              " where " + std::to_string(shape[depth]) + " was expected)";
      return false;
    }
    for (const nlohmann::json &item : v)
      if (!flatten(item, depth + 1, shape, values, maxValues, error))
        return false;
    return true;
  }
  if (depth != shape.size()) {
    error = "nested lists are not rectangular (a number where a list was expected)";
    return false;
  }
  if (values.size() >= maxValues) {
    error = "the value has more than " + std::to_string(maxValues) + " elements";
    return false;
  }
  if (v.is_boolean()) {
    values.push_back(v.get<bool>() ? 1.0 : 0.0);
  } else if (v.is_number()) {
    values.push_back(v.get<double>());
  } else {
    error = "expected a number, a bool or a list of them, got " + std::string(v.type_name());
    return false;
  }
  return true;
}

} // namespace

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                 uint8_t(bytes[i + 2]);
    for (int s : {18, 12, 6, 0})
      out.push_back(kAlphabet[(n >> s) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view text) {
  std::array<int, 256> value;
  value.fill(-1);
  for (int i = 0; i < 64; ++i)
    value[uint8_t(kAlphabet[i])] = i;
  while (!text.empty() && text.back() == '=')
    text.remove_suffix(1);
  if (text.size() % 4 == 1)
    return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value[uint8_t(c)];
    if (v < 0)
      return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

nlohmann::json tensorToJson(const torch::Tensor &tensor) {
  torch::Tensor t = tensor.contiguous().cpu();
  std::string_view bytes(static_cast<const char *>(t.data_ptr()),
                         size_t(t.numel()) * t.element_size());
  return {{"dtype", torchName(t.scalar_type())},
          {"shape", t.sizes().vec()},
          {"data", base64Encode(bytes)}};
}

std::optional<torch::Tensor> tensorFromJson(const nlohmann::json &value, size_t maxBytes,
                                            std::string &error) {
  if (value.is_object()) {
    for (const char *key : {"dtype", "shape", "data"})
      if (!value.contains(key)) {
        error = std::string("a tensor object needs \"dtype\", \"shape\" and \"data\"; \"") + key +
                "\" is missing";
        return std::nullopt;
      }
    if (!value["dtype"].is_string() || !parseDtype(value["dtype"].get<std::string>())) {
      error = "\"dtype\" must be one of float32, float64, bfloat16, float16, int64, int32, bool";
      return std::nullopt;
    }
    torch::ScalarType dtype = *parseDtype(value["dtype"].get<std::string>());
    std::vector<int64_t> shape;
    int64_t numel = 1;
    if (!value["shape"].is_array()) {
      error = "\"shape\" must be a list of sizes";
      return std::nullopt;
    }
    for (const nlohmann::json &d : value["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (1LL << 40)) {
        error = "\"shape\" must be a list of non-negative integer sizes";
        return std::nullopt;
      }
      shape.push_back(d.get<int64_t>());
      numel *= shape.back();
      if (numel > (1LL << 40)) {
        error = "\"shape\" is too large";
        return std::nullopt;
      }
    }
    if (shape.size() > 8) {
      error = "\"shape\" has more than 8 dimensions";
      return std::nullopt;
    }
    if (!value["data"].is_string()) {
      error = "\"data\" must be a base64 string";
      return std::nullopt;
    }
    const size_t expected = size_t(numel) * c10::elementSize(dtype);
    if (expected > maxBytes) {
      error = "the tensor has " + std::to_string(expected) + " bytes, more than the limit of " +
              std::to_string(maxBytes);
      return std::nullopt;
    }
    std::optional<std::string> bytes = base64Decode(value["data"].get<std::string>());
    if (!bytes) {
      error = "\"data\" is not valid base64";
      return std::nullopt;
    }
    if (bytes->size() != expected) {
      error = "\"data\" has " + std::to_string(bytes->size()) + " bytes but dtype " +
              torchName(dtype) + " and shape need " + std::to_string(expected);
      return std::nullopt;
    }
    torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
    if (expected)
      std::memcpy(t.data_ptr(), bytes->data(), expected);
    return t;
  }
  std::vector<int64_t> shape;
  std::vector<double> values;
  if (!flatten(value, 0, shape, values, maxBytes / sizeof(float), error))
    return std::nullopt;
  return torch::tensor(values, torch::kFloat64).reshape(shape);
}

} // namespace nnsc::server

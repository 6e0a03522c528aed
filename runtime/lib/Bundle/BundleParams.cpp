//===- BundleParams.cpp - params of a trace from the command line -*- C++ -*-===//

#include "nnsc/Runtime/Bundle/BundleParams.h"

#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Bundle/ParamText.h"
#include "nnsc/Runtime/Models/SafetensorsFile.h"

#include <cstring>
#include <map>

namespace nnsc {

namespace {

std::optional<torch::ScalarType> safetensorsDtype(const std::string &dtype) {
  static const std::map<std::string, torch::ScalarType> types = {
      {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
      {"F64", torch::kFloat64}, {"I64", torch::kInt64},   {"I32", torch::kInt32},
      {"I16", torch::kInt16},   {"I8", torch::kInt8},     {"U8", torch::kUInt8},
      {"BOOL", torch::kBool}};
  auto it = types.find(dtype);
  return it == types.end() ? std::nullopt : std::optional(it->second);
}

/// VALUE of `@FILE[:KEY]`.
std::optional<torch::Tensor> fromFile(const BundleParam &p, const std::string &spec,
                                      std::string &error) {
  std::string path = spec, key;
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos && spec.find(".safetensors", colon) == std::string::npos) {
    path = spec.substr(0, colon);
    key = spec.substr(colon + 1);
  }
  std::string openError;
  auto file = SafetensorsFile::open(path, openError);
  if (!file) {
    error = "param '" + p.name + "': " + openError;
    return std::nullopt;
  }
  const SafetensorInfo *info = nullptr;
  if (!key.empty()) {
    info = file->find(key);
  } else if (file->tensors().size() == 1) {
    info = &file->tensors().begin()->second;
  } else {
    key = p.name;
    info = file->find(key);
  }
  if (!info) {
    error = "param '" + p.name + "': '" + path + "' has no tensor '" + key + "'";
    return std::nullopt;
  }
  std::optional<torch::ScalarType> dtype = safetensorsDtype(info->dtype);
  if (!dtype) {
    error = "param '" + p.name + "': tensor '" + info->name + "' has dtype " + info->dtype +
            ", which cannot be read";
    return std::nullopt;
  }
  if (info->shape != p.shape) {
    error = "param '" + p.name + "' is " + describeType(p.dtype, p.shape) + " but tensor '" +
            info->name + "' in '" + path + "' has shape " +
            describeType(p.dtype, info->shape).substr(std::string(dtypeName(p.dtype)).size());
    return std::nullopt;
  }
  torch::Tensor t = torch::from_blob(const_cast<uint8_t *>(info->data), info->shape,
                                     torch::TensorOptions().dtype(*dtype));
  return t.to(toTorchDtype(p.dtype), false, true);
}

/// VALUE given inline (ParamText.h).
std::optional<torch::Tensor> fromText(const BundleParam &p, const std::string &text,
                                      std::string &error) {
  std::optional<std::vector<double>> values = parseParamText(p, text, error);
  if (!values)
    return std::nullopt;
  return torch::tensor(*values, torch::kFloat64).reshape(p.shape).to(toTorchDtype(p.dtype));
}

/// The param of `trace` named `name`, or null with `error` listing the trace's params.
const BundleParam *findParam(const BundleTrace &trace, const std::string &name,
                             std::string &error) {
  for (const BundleParam &p : trace.params)
    if (p.name == name)
      return &p;
  std::string known;
  for (const BundleParam &p : trace.params)
    known += (known.empty() ? "" : ", ") + p.name;
  error = "the trace has no param '" + name + "' (its params: " + (known.empty() ? "none" : known) +
          ")";
  return nullptr;
}

} // namespace

std::optional<std::vector<torch::Tensor>> bindParams(const BundleTrace &trace,
                                                     const std::vector<std::string> &specs,
                                                     std::string &error, const std::string &flag) {
  std::vector<NamedParam> given;
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      error = flag + " needs NAME=VALUE, got '" + spec + "'";
      return std::nullopt;
    }
    std::string name = spec.substr(0, eq), text = spec.substr(eq + 1);
    const BundleParam *p = findParam(trace, name, error);
    if (!p)
      return std::nullopt;
    std::optional<torch::Tensor> value =
        text.starts_with("@") ? fromFile(*p, text.substr(1), error) : fromText(*p, text, error);
    if (!value)
      return std::nullopt;
    given.emplace_back(name, *value);
  }
  return bindParamValues(
      trace, given,
      [&flag](const std::string &name) { return "give it with " + flag + " " + name + "=VALUE"; },
      error);
}

std::optional<std::vector<torch::Tensor>>
bindParamValues(const BundleTrace &trace, const std::vector<NamedParam> &given,
                const std::function<std::string(const std::string &)> &howToGive,
                std::string &error) {
  std::vector<std::optional<torch::Tensor>> values(trace.params.size());
  for (const auto &[name, value] : given) {
    const BundleParam *p = findParam(trace, name, error);
    if (!p)
      return std::nullopt;
    const size_t index = size_t(p - trace.params.data());
    if (values[index]) {
      error = "param '" + name + "' is given twice";
      return std::nullopt;
    }
    if (!value.sizes().equals(p->shape)) {
      error = "param '" + name + "' is " + describeType(p->dtype, p->shape) +
              " but the value given has shape " +
              describeType(p->dtype, value.sizes().vec()).substr(strlen(dtypeName(p->dtype)));
      return std::nullopt;
    }
    const bool integral = p->dtype == NNSC_DTYPE_I64 || p->dtype == NNSC_DTYPE_BOOL;
    if (integral && value.is_floating_point() && !value.eq(value.trunc()).all().item<bool>()) {
      error = "param '" + name + "' is " + describeType(p->dtype, p->shape) +
              " but the value given is not integral";
      return std::nullopt;
    }
    if (p->dtype == NNSC_DTYPE_BOOL && !value.eq(0).logical_or(value.eq(1)).all().item<bool>()) {
      error = "param '" + name + "' is " + describeType(p->dtype, p->shape) +
              " but the value given is not 0/1 (false/true)";
      return std::nullopt;
    }
    values[index] = value.to(toTorchDtype(p->dtype)).contiguous();
  }
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < trace.params.size(); ++i) {
    const BundleParam &p = trace.params[i];
    if (values[i]) {
      out.push_back(*values[i]);
      continue;
    }
    if (!p.defaultValue) {
      error = "param '" + p.name + "' (" + describeType(p.dtype, p.shape) + ") has no default; " +
              howToGive(p.name);
      return std::nullopt;
    }
    out.push_back(torch::from_blob(const_cast<void *>(p.defaultValue), p.shape,
                                   torch::TensorOptions().dtype(toTorchDtype(p.dtype)))
                      .clone());
  }
  return out;
}

} // namespace nnsc

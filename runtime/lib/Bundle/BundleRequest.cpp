//===- BundleRequest.cpp - one request's bundle state -----------*- C++ -*-===//

#include "nnsc/Runtime/Bundle/BundleRequest.h"

namespace nnsc {

torch::ScalarType toTorchDtype(nnsc_dtype dtype) {
  switch (dtype) {
  case NNSC_DTYPE_F32:
    return torch::kFloat32;
  case NNSC_DTYPE_BF16:
    return torch::kBFloat16;
  case NNSC_DTYPE_F16:
    return torch::kFloat16;
  case NNSC_DTYPE_I64:
    return torch::kInt64;
  case NNSC_DTYPE_BOOL:
    return torch::kBool;
  }
  return torch::kFloat32;
}

std::optional<nnsc_dtype> toABIDtype(torch::ScalarType dtype) {
  switch (dtype) {
  case torch::kFloat32:
    return NNSC_DTYPE_F32;
  case torch::kBFloat16:
    return NNSC_DTYPE_BF16;
  case torch::kFloat16:
    return NNSC_DTYPE_F16;
  case torch::kInt64:
    return NNSC_DTYPE_I64;
  case torch::kBool:
    return NNSC_DTYPE_BOOL;
  default:
    return std::nullopt;
  }
}

std::string describeType(nnsc_dtype dtype, const std::vector<int64_t> &shape) {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") +
         (shape[i] == NNSC_DIM_TOKENS ? std::string("T") : std::to_string(shape[i]));
  return s + "]";
}

nnsc_tensor viewOf(const torch::Tensor &t) {
  nnsc_tensor v{};
  v.data = t.data_ptr();
  v.dtype = toABIDtype(t.scalar_type()).value_or(NNSC_DTYPE_F32);
  v.rank = int32_t(t.dim());
  for (int64_t i = 0; i < t.dim() && i < NNSC_MAX_RANK; ++i) {
    v.shape[i] = t.size(i);
    v.strides[i] = t.stride(i);
  }
  return v;
}

torch::Tensor tensorOf(const nnsc_tensor &t) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank), strides(t.strides, t.strides + t.rank);
  return torch::from_blob(t.data, shape, strides,
                          torch::TensorOptions().dtype(toTorchDtype(t.dtype)));
}

BundleRequest::BundleRequest(const BundleTrace &trace, std::vector<torch::Tensor> params)
    : traceDesc(trace), paramValues(std::move(params)),
      frameBytes(torch::zeros({trace.frameBytes}, torch::kUInt8)) {
  for (torch::Tensor &p : paramValues) {
    p = p.contiguous();
    views.push_back(viewOf(p));
  }
}

std::optional<std::string> BundleRequest::save(int32_t index, int64_t step,
                                               const torch::Tensor &value) {
  if (index < 0 || size_t(index) >= traceDesc.saves.size())
    return "save index " + std::to_string(index) + " out of range";
  const BundleSave &desc = traceDesc.saves[size_t(index)];
  std::vector<int64_t> shape(value.sizes().begin(), value.sizes().end());
  bool fits = toABIDtype(value.scalar_type()) == desc.dtype && shape.size() == desc.shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i)
    fits = desc.shape[i] == NNSC_DIM_TOKENS || desc.shape[i] == shape[i];
  if (!fits)
    return "save '" + desc.name + "' is declared " + describeType(desc.dtype, desc.shape) +
           " but the kernel saved " +
           describeType(toABIDtype(value.scalar_type()).value_or(NNSC_DTYPE_F32), shape);
  std::string name = desc.perStep ? desc.name + "." + std::to_string(step) : desc.name;
  saved[name] = value.clone(at::MemoryFormat::Contiguous);
  return std::nullopt;
}

void BundleRequest::restart() {
  frameBytes.zero_();
  saved.clear();
  failure.reset();
  stopRequested = false;
  finishRequested = false;
}

void BundleRequest::fail(const std::string &message) {
  if (!failure)
    failure = message;
}

} // namespace nnsc

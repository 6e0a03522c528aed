//===- BundleRequest.cpp - one request's bundle state -----------*- C++ -*-===//

#include "nnsc/Runtime/Bundle/BundleRequest.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

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
      frameBytes(torch::zeros({trace.frameBytes}, torch::kUInt8)),
      stoppedInvokes(size_t(std::max(trace.numInvokes, 1)), false) {
  for (torch::Tensor &p : paramValues) {
    p = p.contiguous();
    views.push_back(viewOf(p));
  }
}

BundleRequest::~BundleRequest() { releaseFrameHeap(); }

void BundleRequest::releaseFrameHeap() {
  auto *frame = static_cast<uint8_t *>(this->frame());
  std::vector<void *> copies;
  for (int64_t offset : traceDesc.frameHeapSlots) {
    void *copy = nullptr;
    std::memcpy(&copy, frame + offset, sizeof copy);
    if (copy)
      copies.push_back(copy);
    std::memset(frame + offset, 0, sizeof copy);
  }
  if (!deviceHeap) {
    for (void *copy : copies)
      std::free(copy); // the host kernels' memref.alloc is the C library's malloc
    return;
  }
  // Device kernels ran on the frame. Only token-level values have a run-time shape, and on a
  // device backend only device kernels see them, so every copy is in the device heap.
  if (copies.empty())
    return;
  if (std::string why = deviceHeap->freeFrameHeap(copies); !why.empty())
    std::cerr << "nnsc: trace '" << traceDesc.name << "' left " << copies.size()
              << " device-heap copies unfreed: " << why << "\n";
}

std::optional<std::string> BundleRequest::save(int32_t index, int64_t step,
                                               const nnsc_tensor &value) {
  if (index < 0 || size_t(index) >= traceDesc.saves.size())
    return "save index " + std::to_string(index) + " out of range";
  if (value.rank < 0 || value.rank > NNSC_MAX_RANK)
    return "a save has rank " + std::to_string(value.rank);
  if (!dtypeBytes(value.dtype))
    return "a save has dtype " + std::to_string(int(value.dtype)) + ", which the ABI does not name";
  const BundleSave &desc = traceDesc.saves[size_t(index)];
  bool fits = value.dtype == desc.dtype && size_t(value.rank) == desc.shape.size();
  for (int32_t i = 0; fits && i < value.rank; ++i)
    fits = value.shape[i] >= 0 &&
           (desc.shape[size_t(i)] == NNSC_DIM_TOKENS || desc.shape[size_t(i)] == value.shape[i]);
  if (!fits)
    return "save '" + desc.name + "' is declared " + describeType(desc.dtype, desc.shape) +
           " but the kernel saved " +
           describeType(value.dtype, std::vector<int64_t>(value.shape, value.shape + value.rank));
  const SaveStore::Key key{index, desc.perStep ? step : -1};
  if (saveLimit && saved.bytesAfter(key, value) > saveLimit)
    return "the saves of this request pass its limit of " + std::to_string(saveLimit) +
           " bytes (at save '" + desc.name + "')";
  saved.put(key, value);
  return std::nullopt;
}

std::map<std::string, torch::Tensor> BundleRequest::saves() const {
  std::map<std::string, torch::Tensor> named;
  for (auto &[key, value] : saved.values()) {
    const std::string &name = traceDesc.saves[size_t(key.first)].name;
    named.emplace(key.second < 0 ? name : name + "." + std::to_string(key.second),
                  std::move(value));
  }
  return named;
}

void BundleRequest::restart() {
  releaseFrameHeap();
  frameBytes.zero_();
  saved.clear();
  failure.reset();
  stoppedInvokes.assign(stoppedInvokes.size(), false);
  finishRequested = false;
}

void BundleRequest::fail(const std::string &message) {
  if (!failure)
    failure = message;
}

} // namespace nnsc

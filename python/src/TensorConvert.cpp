//===- TensorConvert.cpp - torch::Tensor <-> Python arrays ------*- C++ -*-===//

#include "TensorConvert.h"

#include "nnsc/Runtime/Support/Error.h"

#include <string>
#include <vector>

namespace nb = nanobind;

namespace nnsc::python {

namespace {

using Code = nb::dlpack::dtype_code;

torch::ScalarType scalarTypeOf(nb::dlpack::dtype d) {
  if (d.lanes == 1) {
    switch (Code(d.code)) {
    case Code::Float:
      if (d.bits == 32)
        return torch::kFloat32;
      if (d.bits == 64)
        return torch::kFloat64;
      if (d.bits == 16)
        return torch::kFloat16;
      break;
    case Code::Bfloat:
      if (d.bits == 16)
        return torch::kBFloat16;
      break;
    case Code::Int:
      if (d.bits == 64)
        return torch::kInt64;
      if (d.bits == 32)
        return torch::kInt32;
      if (d.bits == 16)
        return torch::kInt16;
      if (d.bits == 8)
        return torch::kInt8;
      break;
    case Code::UInt:
      if (d.bits == 8)
        return torch::kUInt8;
      break;
    case Code::Bool:
      return torch::kBool;
    default:
      break;
    }
  }
  throw nb::type_error(("unsupported array dtype (DLPack code " + std::to_string(d.code) + ", " +
                        std::to_string(d.bits) + " bits)")
                           .c_str());
}

nb::dlpack::dtype dlpackOf(torch::ScalarType t) {
  switch (t) {
  case torch::kFloat32:
    return nb::dtype<float>();
  case torch::kFloat64:
    return nb::dtype<double>();
  case torch::kInt64:
    return nb::dtype<int64_t>();
  case torch::kInt32:
    return nb::dtype<int32_t>();
  case torch::kBool:
    return nb::dtype<bool>();
  case torch::kFloat16:
    return {uint8_t(Code::Float), 16, 1};
  case torch::kBFloat16:
    return {uint8_t(Code::Bfloat), 16, 1};
  default:
    throw nnsc::InvalidInput(std::string("cannot hand a ") + c10::toString(t) +
                             " tensor to Python");
  }
}

} // namespace

torch::Tensor toTensor(const InArray &array) {
  std::vector<int64_t> shape, strides;
  for (size_t i = 0; i < array.ndim(); ++i) {
    shape.push_back(int64_t(array.shape(i)));
    strides.push_back(array.stride(i));
  }
  torch::ScalarType type = scalarTypeOf(array.dtype());
  return torch::from_blob(const_cast<void *>(array.data()), shape, strides,
                          torch::TensorOptions().dtype(type))
      .clone(torch::MemoryFormat::Contiguous);
}

TorchArray toTorch(const torch::Tensor &tensor, std::shared_ptr<void> keepAlive) {
  struct Owner {
    torch::Tensor tensor;
    std::shared_ptr<void> keepAlive;
  };
  auto *owner = new Owner{tensor, std::move(keepAlive)};
  nb::capsule capsule(owner, [](void *p) noexcept { delete static_cast<Owner *>(p); });
  std::vector<size_t> shape;
  std::vector<int64_t> strides;
  for (int64_t i = 0; i < tensor.dim(); ++i) {
    shape.push_back(size_t(tensor.size(i)));
    strides.push_back(tensor.stride(i));
  }
  return TorchArray(tensor.data_ptr(), shape.size(), shape.data(), capsule, strides.data(),
                    dlpackOf(tensor.scalar_type()), nb::device::cpu::value);
}

} // namespace nnsc::python

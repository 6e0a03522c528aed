//===- TensorConvert.h - torch::Tensor <-> Python arrays --------*- C++ -*-===//
//
// The extension never includes torch's Python bindings (they are pybind11's): tensors cross
// the boundary as DLPack arrays through nanobind's ndarray. Into C++, any CPU array (torch,
// numpy, anything with __dlpack__) is copied into a fresh torch::Tensor; out of C++, a tensor
// becomes a torch.Tensor that views the same memory and keeps the C++ owner alive.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PYTHON_TENSORCONVERT_H
#define NNSC_PYTHON_TENSORCONVERT_H

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <torch/torch.h>

#include <memory>

namespace nnsc::python {

/// A read-only CPU array of any dtype and strides, as Python hands it in.
using InArray = nanobind::ndarray<nanobind::ro, nanobind::device::cpu>;
/// An array handed out as a torch.Tensor.
using TorchArray = nanobind::ndarray<nanobind::pytorch>;

/// A contiguous torch::Tensor copy of `array`. Throws nanobind::type_error for a dtype torch
/// has no name for.
torch::Tensor toTensor(const InArray &array);

/// A torch.Tensor viewing `tensor` (CPU, any strides); `keepAlive` (may be null) lives as long
/// as the Python tensor, with `tensor` itself.
TorchArray toTorch(const torch::Tensor &tensor, std::shared_ptr<void> keepAlive = nullptr);

} // namespace nnsc::python

#endif // NNSC_PYTHON_TENSORCONVERT_H

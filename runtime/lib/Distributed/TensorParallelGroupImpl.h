//===- TensorParallelGroupImpl.h - a group's c10d objects -------*- C++ -*-===//
//
// What a TensorParallelGroup holds, for the two places that create one: the Gloo group
// (TensorParallelGroup.cpp) and the NCCL group in the CUDA backend library (NcclGroup.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LIB_DISTRIBUTED_TENSORPARALLELGROUPIMPL_H
#define NNSC_RUNTIME_LIB_DISTRIBUTED_TENSORPARALLELGROUPIMPL_H

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace nnsc {

struct TensorParallelGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  /// Where the backend's collectives run: tensors elsewhere are copied there and back.
  torch::Device device = torch::kCPU;
};

/// The rendezvous store of `options`: rank 0 serves it, the others connect. Throws
/// DistributedError naming the address (a port in use, a store that never came).
c10::intrusive_ptr<c10d::Store> connectStore(const DistributedOptions &options);

} // namespace nnsc

#endif // NNSC_RUNTIME_LIB_DISTRIBUTED_TENSORPARALLELGROUPIMPL_H

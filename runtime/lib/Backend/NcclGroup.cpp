//===- NcclGroup.cpp - tensor parallelism's NCCL process group --*- C++ -*-===//
//
// The CUDA backend's ranks meet through the same TCPStore as the CPU's and run their
// collectives on ProcessGroupNCCL: the c10d backend torch.distributed uses on GPUs. It lives
// in the CUDA backend library, the only one that links LibTorch's CUDA libraries.
//
//===----------------------------------------------------------------------===//

#include "TensorParallelGroupImpl.h"

#include "nnsc/Runtime/Backend/BackendError.h"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace nnsc {

std::shared_ptr<TensorParallelGroup> connectNcclGroup(const DistributedOptions &options,
                                                      torch::Device device) {
  auto impl = std::make_unique<TensorParallelGroup::Impl>();
  impl->store = connectStore(options);
  impl->device = device;
  try {
    auto nccl = c10d::ProcessGroupNCCL::Options::create();
    nccl->timeout = options.timeout;
    impl->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, options.rank,
                                                                options.worldSize, nccl);
  } catch (const std::exception &e) {
    throw DistributedError("tensor parallel rank " + std::to_string(options.rank) +
                           ": cannot create the NCCL process group on " + device.str() + ": " +
                           e.what());
  }
  return TensorParallelGroup::adopt(std::move(impl), options.rank, options.worldSize);
}

} // namespace nnsc

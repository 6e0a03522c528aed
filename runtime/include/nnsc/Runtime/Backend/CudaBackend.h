//===- CudaBackend.h - the model on a CUDA device ---------------*- C++ -*-===//
//
// A DeviceBackend whose CausalLM has its weights and KV cache as LibTorch CUDA tensors and
// runs the CUDA kernels (CudaKernels: RMSNorm, RoPE, KV store, varlen prefill and decode
// attention) on the current torch CUDA stream; GEMMs and the other ops are LibTorch's.
// Bundle kernels at sites whose value is on the GPU run through CudaBundleLauncher.
//
// Lives in the CUDA backend library (libNNSCBackendCUDA.so), which tools load on demand
// through CudaBackendLoader.h.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_CUDABACKEND_H
#define NNSC_RUNTIME_BACKEND_CUDABACKEND_H

#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Models/ModelWeights.h"

#include <memory>
#include <string>

namespace nnsc {

/// The number of CUDA devices; 0 with `reason` set when there is none (no driver or GPU).
int cudaDeviceCount(std::string &reason);

/// Moves `weights` to CUDA device `deviceIndex` and returns the backend running them. Throws
/// BackendError when that device does not exist (no driver, no GPU, an index past the last
/// one) or the model does not fit the kernels (head_dim, dtype). With `group` (NCCL,
/// connectNcclGroup) the weights are this rank's shard (docs/Distributed.md).
std::unique_ptr<DeviceBackend>
makeCudaBackend(ModelWeights weights, int deviceIndex = 0,
                std::shared_ptr<TensorParallelGroup> group = nullptr);

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CUDABACKEND_H

//===- CudaBackendLoader.h - the CUDA backend, loaded on demand -*- C++ -*-===//
//
// The CUDA backend is a shared library (libNNSCBackendCUDA.so, built only when nvcc is
// found) that links LibTorch's CUDA libraries. Tools load it with dlopen only when asked for
// CUDA, so CPU runs never pay for loading those libraries and a CPU-only build runs the same
// tools.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_CUDABACKENDLOADER_H
#define NNSC_RUNTIME_BACKEND_CUDABACKENDLOADER_H

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Models/ModelWeights.h"

#include <memory>

namespace nnsc {

/// The symbol the CUDA backend library exports: creates a backend running `weights` (moved
/// from) on CUDA device `deviceIndex`, as one rank of `distributed`'s NCCL group when it is
/// not null; throws BackendError (DistributedError for the group).
using CreateCudaBackendFn = ModelBackend *(*)(ModelWeights *weights, int deviceIndex,
                                              const DistributedOptions *distributed);
inline constexpr const char *kCreateCudaBackendSymbol = "nnscCreateCudaBackend";

/// Whether this build compiled the CUDA backend library.
bool cudaBackendCompiled();

/// Loads the CUDA backend library and creates a backend running `weights` on CUDA device
/// `deviceIndex` (one rank of `distributed`'s NCCL group when given). Throws BackendError
/// when the build has no CUDA backend, the library cannot be loaded, or no CUDA device is
/// present.
std::shared_ptr<ModelBackend> loadCudaBackend(ModelWeights weights, int deviceIndex = 0,
                                              const DistributedOptions *distributed = nullptr);

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CUDABACKENDLOADER_H

//===- CudaBackendLoader.cpp - the CUDA backend, loaded on demand -*- C++ -*-===//

#include "nnsc/Runtime/Backend/CudaBackendLoader.h"

#include "nnsc/Runtime/Backend/BackendError.h"

#include <dlfcn.h>

#include <string>

namespace nnsc {

bool cudaBackendCompiled() {
#ifdef NNSC_CUDA_BACKEND_LIBRARY
  return true;
#else
  return false;
#endif
}

std::shared_ptr<ModelBackend>
loadCudaBackend([[maybe_unused]] ModelWeights weights, [[maybe_unused]] int deviceIndex,
                [[maybe_unused]] const DistributedOptions *distributed) {
#ifndef NNSC_CUDA_BACKEND_LIBRARY
  throw BackendError("this build has no CUDA backend (nvcc was not found when it was "
                     "configured; reconfigure with the CUDA toolkit and -DNNSC_ENABLE_CUDA=ON)");
#else
  // Loaded once and never closed: the backends it creates run its code.
  static void *library = dlopen(NNSC_CUDA_BACKEND_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw BackendError(std::string("cannot load the CUDA backend library '") +
                       NNSC_CUDA_BACKEND_LIBRARY + "': " + dlerror());
  auto create = reinterpret_cast<CreateCudaBackendFn>(dlsym(library, kCreateCudaBackendSymbol));
  if (!create)
    throw BackendError(std::string("the CUDA backend library '") + NNSC_CUDA_BACKEND_LIBRARY +
                       "' does not export '" + kCreateCudaBackendSymbol + "'");
  return std::shared_ptr<ModelBackend>(create(&weights, deviceIndex, distributed));
#endif
}

} // namespace nnsc

//===- CudaBackend.cpp - the model on a CUDA device -------------*- C++ -*-===//

#include "nnsc/Runtime/Backend/CudaBackend.h"

#include "CudaBundleLauncher.h"

#include "nnsc/Runtime/Backend/BackendError.h"
#include "nnsc/Runtime/Backend/CudaBackendLoader.h"
#include "nnsc/Runtime/Backend/CudaKernels.h"
#include "nnsc/Runtime/Kernels/PagedAttentionCuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

namespace nnsc {

namespace {

/// The device `index`, checked to exist.
torch::Device cudaDevice(int index) {
  std::string reason;
  const int count = cudaDeviceCount(reason);
  if (count == 0)
    throw BackendError("no CUDA device is present (" + reason + ")");
  if (index < 0 || index >= count)
    throw BackendError("CUDA device " + std::to_string(index) + " does not exist (" +
                       std::to_string(count) + " present)");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

ModelWeights toDevice(ModelWeights w, torch::Device device) {
  if (w.config.headDim > kernels::kMaxCudaHeadDim)
    throw BackendError("head_dim " + std::to_string(w.config.headDim) +
                       " exceeds the CUDA attention kernels' " +
                       std::to_string(kernels::kMaxCudaHeadDim));
  if (w.dtype != torch::kFloat32 && w.dtype != torch::kBFloat16)
    throw BackendError("the CUDA backend runs fp32 and bf16 models");
  auto move = [&](torch::Tensor &t) {
    if (t.defined())
      t = t.to(device);
  };
  const bool tied = w.lmHead.is_same(w.embed);
  move(w.embed);
  move(w.norm);
  w.lmHead = tied ? w.embed : w.lmHead.to(device);
  // The quantized GEMV is a CPU kernel: the blocks would only take host memory.
  w.lmHeadQuant = w.embedQuant = {};
  for (LayerWeights &l : w.layers) {
    for (torch::Tensor *t : {&l.inputNorm, &l.qkv, &l.qkvBias, &l.qNorm, &l.kNorm, &l.o,
                             &l.attnOutNorm, &l.postNorm, &l.gateUp, &l.down, &l.mlpOutNorm})
      move(*t);
    l.qkvQuant = l.oQuant = l.gateUpQuant = l.downQuant = {};
  }
  return w;
}

} // namespace

int cudaDeviceCount(std::string &reason) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error);
    return 0;
  }
  if (count == 0)
    reason = "the driver reports no GPU";
  return count;
}

std::unique_ptr<DeviceBackend> makeCudaBackend(ModelWeights weights, int deviceIndex,
                                               std::shared_ptr<TensorParallelGroup> group) {
  const torch::Device device = cudaDevice(deviceIndex);
  c10::cuda::CUDAGuard guard(device);
  auto model = std::make_shared<const CausalLM>(toDevice(std::move(weights), device),
                                                CudaKernels::get(), std::move(group));
  // Runs the device copies of a --target=cuda bundle; throws BackendError for a bundle
  // without them.
  auto launcher = [device](std::shared_ptr<const Bundle> bundle) {
    return std::make_shared<CudaBundleLauncher>(std::move(bundle), device);
  };
  return std::make_unique<DeviceBackend>(std::move(model), launcher);
}

} // namespace nnsc

/// The CUDA backend library's entry point (CudaBackendLoader.h).
extern "C" __attribute__((visibility("default"))) nnsc::ModelBackend *
nnscCreateCudaBackend(nnsc::ModelWeights *weights, int deviceIndex,
                      const nnsc::DistributedOptions *distributed) {
  std::shared_ptr<nnsc::TensorParallelGroup> group;
  // The device first: without one, the group is not worth forming.
  std::string reason;
  if (nnsc::cudaDeviceCount(reason) == 0)
    throw nnsc::BackendError("no CUDA device is present (" + reason + ")");
  if (distributed && distributed->worldSize > 1)
    group = nnsc::connectNcclGroup(
        *distributed, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(deviceIndex)));
  return nnsc::makeCudaBackend(std::move(*weights), deviceIndex, std::move(group)).release();
}

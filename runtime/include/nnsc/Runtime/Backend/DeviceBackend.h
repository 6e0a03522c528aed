//===- DeviceBackend.h - a CausalLM on one device ---------------*- C++ -*-===//
//
// The one model backend: a CausalLM whose weights are on a device, its paged KV cache on the
// same device, and the forward pass run there with that model's DeviceKernels. It is the
// same class for every device; what differs is decided where the model is made (the CPU:
// the caching HostAllocator and oneDNN packing, in makeCpuBackend; CUDA: weights moved to
// the GPU and CudaKernels, in the CUDA backend library's makeCudaBackend) and by the
// optional bundle launcher (device copies of bundle kernels).
//
// Step inputs arrive on the CPU and the logits return there (ModelBackend.h); on another
// device the step's tokens and metadata are copied there first, under a device guard.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_DEVICEBACKEND_H
#define NNSC_RUNTIME_BACKEND_DEVICEBACKEND_H

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Models/CausalLM.h"
#include "nnsc/Runtime/Models/KVCache.h"

#include <functional>
#include <memory>

namespace nnsc {

/// Runs a CausalLM on the device its weights are on.
class DeviceBackend final : public ModelBackend {
public:
  /// What runs a bundle's device kernels (ModelBackend::bundleLauncher); may throw
  /// BackendError for a bundle that cannot run on this device.
  using LauncherFactory =
      std::function<std::shared_ptr<DeviceKernelLauncher>(std::shared_ptr<const Bundle>)>;

  /// `model`'s weights must already be on the device it runs on (CausalLM::device()).
  /// Without `launcher` every site value a bundle sees is on the CPU (host kernels run).
  explicit DeviceBackend(std::shared_ptr<const CausalLM> model, LauncherFactory launcher = {});

  BackendCapabilities capabilities() const override;
  const schema::ModelConfig &config() const override { return lm->config(); }
  const schema::Architecture &architecture() const override { return lm->architecture(); }
  torch::ScalarType dtype() const override { return lm->dtype(); }
  std::shared_ptr<DeviceKernelLauncher>
  bundleLauncher(std::shared_ptr<const Bundle> bundle) const override;

  std::shared_ptr<const CausalLM> causalLM() const override { return lm; }
  TensorParallelGroup *tensorParallel() const override { return lm->tensorParallel(); }
  const CausalLM &model() const { return *lm; }
  torch::Device device() const { return lm->device(); }
  KVCache &kvCache() { return cache; }

protected:
  void allocateCache(int64_t numBlocks, int64_t blockSize) override;
  torch::Tensor forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                        const HookDispatch *hooks) override;

private:
  std::shared_ptr<const CausalLM> lm;
  LauncherFactory launcher;
  KVCache cache;
};

/// The CPU backend: `model` (CPU weights) with activations from the caching host allocator
/// (HostAllocator.h) and its projection weights packed for oneDNN now, as part of loading
/// rather than of the first batched step.
std::shared_ptr<DeviceBackend> makeCpuBackend(std::shared_ptr<const CausalLM> model);

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_DEVICEBACKEND_H

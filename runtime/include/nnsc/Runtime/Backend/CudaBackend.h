//===- CudaBackend.h - the model on a CUDA device ---------------*- C++ -*-===//
//
// A CausalLM whose weights and KV cache are LibTorch CUDA tensors, running the CUDA kernels
// (RMSNorm, RoPE, KV store, varlen prefill and decode attention) on the current torch CUDA
// stream; GEMMs and the other ops are LibTorch's. Step inputs arrive on the CPU and the
// logits return there (see ModelBackend.h). Bundle kernels are host code, so this backend
// declares no support for them; LibTorch site hooks run on the device tensors.
//
// Lives in the CUDA backend library (libNNSCBackendCUDA.so), which tools load on demand
// through CudaBackendLoader.h.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_CUDABACKEND_H
#define NNSC_RUNTIME_BACKEND_CUDABACKEND_H

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Models/CausalLM.h"
#include "nnsc/Runtime/Models/KVCache.h"

#include <memory>
#include <string>

namespace nnsc {

/// Runs a CausalLM on one CUDA device.
class CudaBackend final : public ModelBackend {
public:
  /// Moves `weights` to CUDA device `deviceIndex`. Throws BackendError when that device does
  /// not exist (no driver, no GPU, an index past the last one) or the model does not fit the
  /// kernels (head_dim, dtype). With `group` (NCCL, connectNcclGroup) the weights are this
  /// rank's shard (docs/Distributed.md).
  CudaBackend(ModelWeights weights, int deviceIndex = 0,
              std::shared_ptr<TensorParallelGroup> group = nullptr);

  /// The number of CUDA devices; 0 with `reason` set when there is none (no driver or GPU).
  static int deviceCount(std::string &reason);

  BackendCapabilities capabilities() const override;
  const schema::ModelConfig &config() const override { return lm->config(); }
  const schema::Architecture &architecture() const override { return lm->architecture(); }
  torch::ScalarType dtype() const override { return lm->dtype(); }
  /// Runs the device copies of a --target=cuda bundle (CudaBundleLauncher); throws
  /// BackendError for a bundle without them.
  std::shared_ptr<DeviceKernelLauncher>
  bundleLauncher(std::shared_ptr<const Bundle> bundle) const override;

  std::shared_ptr<const CausalLM> causalLM() const override { return lm; }
  TensorParallelGroup *tensorParallel() const override { return lm->tensorParallel(); }
  const CausalLM &model() const { return *lm; }
  KVCache &kvCache() { return cache; }

protected:
  void allocateCache(int64_t numBlocks, int64_t blockSize) override;
  torch::Tensor forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                        const HookDispatch *hooks) override;

private:
  torch::Device device;
  std::shared_ptr<const CausalLM> lm;
  KVCache cache;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CUDABACKEND_H

//===- CpuBackend.cpp - the model on the CPU --------------------*- C++ -*-===//

#include "nnsc/Runtime/Backend/CpuBackend.h"
#include "nnsc/Runtime/Backend/HostAllocator.h"

namespace nnsc {

CpuBackend::CpuBackend(std::shared_ptr<const CausalLM> model) : lm(std::move(model)) {
  TORCH_CHECK(lm, "CpuBackend: no model");
  // Activations from here on reuse cached blocks instead of faulting in fresh pages.
  installHostAllocator();
  // Weight layout is part of loading, not of the first batched step.
  lm->packWeights();
}

BackendCapabilities CpuBackend::capabilities() const {
  BackendCapabilities caps;
  caps.device = torch::kCPU;
  caps.dtypes = {torch::kFloat32, torch::kBFloat16};
  caps.prefixCaching = true;
  caps.bundleKernels = true;
  return caps;
}

void CpuBackend::allocateCache(int64_t numBlocks, int64_t blockSize) {
  cache = KVCache(lm->shardConfig(), numBlocks, blockSize, lm->dtype());
}

torch::Tensor CpuBackend::forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                                  const HookDispatch *hooks) {
  return lm->forward(tokens, meta, cache, hooks);
}

} // namespace nnsc

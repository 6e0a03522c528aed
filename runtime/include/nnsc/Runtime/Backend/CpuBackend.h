//===- CpuBackend.h - the model on the CPU ----------------------*- C++ -*-===//
//
// Today's engine path behind the backend interface: a CausalLM with CPU weights, its KV
// cache in host memory, the CPU paged attention kernels, and bundle kernels at its hook
// points.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_CPUBACKEND_H
#define NNSC_RUNTIME_BACKEND_CPUBACKEND_H

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Models/CausalLM.h"
#include "nnsc/Runtime/Models/KVCache.h"

#include <memory>

namespace nnsc {

/// Runs a CausalLM on the CPU.
class CpuBackend final : public ModelBackend {
public:
  explicit CpuBackend(std::shared_ptr<const CausalLM> model);

  BackendCapabilities capabilities() const override;
  const schema::ModelConfig &config() const override { return lm->config(); }
  const schema::Architecture &architecture() const override { return lm->architecture(); }
  torch::ScalarType dtype() const override { return lm->dtype(); }

  std::shared_ptr<const CausalLM> causalLM() const override { return lm; }
  TensorParallelGroup *tensorParallel() const override { return lm->tensorParallel(); }
  const CausalLM &model() const { return *lm; }
  KVCache &kvCache() { return cache; }

protected:
  void allocateCache(int64_t numBlocks, int64_t blockSize) override;
  torch::Tensor forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                        const HookDispatch *hooks) override;

private:
  std::shared_ptr<const CausalLM> lm;
  KVCache cache;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CPUBACKEND_H

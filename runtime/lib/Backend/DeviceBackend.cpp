//===- DeviceBackend.cpp - a CausalLM on one device -------------*- C++ -*-===//

#include "nnsc/Runtime/Backend/DeviceBackend.h"

#include "nnsc/Runtime/Backend/HostAllocator.h"

#include <c10/core/DeviceGuard.h>

namespace nnsc {

namespace {

AttentionMetadata toDevice(const AttentionMetadata &meta, torch::Device device) {
  AttentionMetadata out = meta;
  for (torch::Tensor *t : {&out.cuSeqlensQ, &out.cuSeqlensK, &out.slotMapping, &out.positions,
                           &out.contextLens, &out.blockTables, &out.sampleRows})
    if (t->defined())
      *t = t->to(device, /*non_blocking=*/true);
  return out;
}

} // namespace

DeviceBackend::DeviceBackend(std::shared_ptr<const CausalLM> model, LauncherFactory launcher)
    : lm(std::move(model)), launcher(std::move(launcher)) {
  TORCH_CHECK(lm, "DeviceBackend: no model");
}

BackendCapabilities DeviceBackend::capabilities() const {
  BackendCapabilities caps;
  caps.device = device();
  caps.dtypes = {torch::kFloat32, torch::kBFloat16};
  caps.prefixCaching = true;
  caps.bundleKernels = true;
  caps.batchInvariant = device().is_cpu();
  return caps;
}

std::shared_ptr<DeviceKernelLauncher>
DeviceBackend::bundleLauncher(std::shared_ptr<const Bundle> bundle) const {
  return launcher ? launcher(std::move(bundle)) : nullptr;
}

void DeviceBackend::allocateCache(int64_t numBlocks, int64_t blockSize) {
  cache = KVCache(lm->shardConfig(), numBlocks, blockSize, lm->dtype(), device());
}

torch::Tensor DeviceBackend::forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                                     const HookDispatch *hooks) {
  const torch::Device where = device();
  if (where.is_cpu())
    return lm->forward(tokens, meta, cache, hooks);
  c10::DeviceGuard guard(where);
  torch::Tensor logits =
      lm->forward(tokens.to(where, /*non_blocking=*/true), toDevice(meta, where), cache, hooks);
  return logits.to(torch::kCPU);
}

std::shared_ptr<DeviceBackend> makeCpuBackend(std::shared_ptr<const CausalLM> model) {
  TORCH_CHECK(model && model->device().is_cpu(), "makeCpuBackend: needs a model on the CPU");
  // Activations from here on reuse cached blocks instead of faulting in fresh pages.
  installHostAllocator();
  model->packWeights();
  return std::make_shared<DeviceBackend>(std::move(model));
}

} // namespace nnsc

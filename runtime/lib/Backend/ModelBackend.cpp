//===- ModelBackend.cpp - the model/backend interface of the engine -*- C++ -*-===//

#include "nnsc/Runtime/Backend/ModelBackend.h"

#include "nnsc/Runtime/Bundle/DeviceKernelLauncher.h"

namespace nnsc {

std::shared_ptr<DeviceKernelLauncher>
ModelBackend::bundleLauncher(std::shared_ptr<const Bundle>) const {
  return nullptr;
}

void ModelBackend::allocateKVCache(int64_t numBlocks, int64_t blockSize) {
  TORCH_CHECK(numBlocks > 0 && blockSize > 0,
              "allocateKVCache: the number of blocks and the block size must be positive, got ",
              numBlocks, " blocks of ", blockSize, " tokens");
  allocateCache(numBlocks, blockSize);
  kvBlocks = numBlocks;
  kvBlockTokens = blockSize;
}

void ModelBackend::checkStep(const char *entry, const torch::Tensor &tokens,
                             const AttentionMetadata &meta) const {
  TORCH_CHECK(kvBlocks > 0, entry, ": no KV cache (call allocateKVCache first)");
  TORCH_CHECK(tokens.dim() == 1 && tokens.scalar_type() == torch::kInt64 && tokens.is_cpu(), entry,
              ": tokens must be a [tokens] int64 CPU tensor, got ", tokens.sizes(), " ",
              tokens.scalar_type(), " on ", tokens.device());
  TORCH_CHECK(meta.positions.defined() && meta.positions.size(0) == tokens.size(0), entry, ": ",
              tokens.size(0), " tokens but ", meta.positions.defined() ? meta.positions.size(0) : 0,
              " positions");
}

torch::Tensor ModelBackend::prefillForward(const torch::Tensor &tokens,
                                           const AttentionMetadata &meta,
                                           const HookDispatch *hooks) {
  checkStep("prefillForward", tokens, meta);
  TORCH_CHECK(meta.isPrefill, "prefillForward: the metadata describes a decode step");
  return forward(tokens, meta, hooks);
}

torch::Tensor ModelBackend::decodeForward(const torch::Tensor &tokens,
                                          const AttentionMetadata &meta,
                                          const HookDispatch *hooks) {
  checkStep("decodeForward", tokens, meta);
  TORCH_CHECK(!meta.isPrefill, "decodeForward: the metadata describes a prefill step");
  TORCH_CHECK(tokens.size(0) == meta.contextLens.size(0), "decodeForward: ", tokens.size(0),
              " tokens for ", meta.contextLens.size(0), " sequences (one each in a decode step)");
  return forward(tokens, meta, hooks);
}

} // namespace nnsc

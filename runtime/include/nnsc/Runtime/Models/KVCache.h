//===- KVCache.h - paged K/V tensors of every layer -------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_MODELS_KVCACHE_H
#define NNSC_RUNTIME_MODELS_KVCACHE_H

#include "nnsc/Schema/ModelConfig.h"

#include <torch/torch.h>

#include <vector>

namespace nnsc {

/// The paged KV cache: per layer one K and one V tensor
/// [num_blocks, block_size, kv_heads, head_dim] in the compute dtype, on the model's device.
struct KVCache {
  std::vector<torch::Tensor> k, v;
  /// Per layer, the cache slots that hold no K/V for that layer ([num_blocks * block_size]
  /// uint8, non-zero = absent): rows of a layer or self-attention a trace skipped, which in
  /// transformers never reach that layer's cache. Undefined for a layer that never had one.
  std::vector<torch::Tensor> absent;

  KVCache() = default;
  KVCache(const schema::ModelConfig &config, int64_t numBlocks, int64_t blockSize,
          torch::ScalarType dtype, torch::Device device = torch::kCPU);

  /// Marks `slots` (non-negative) absent in `layer`, making its map on first use.
  void markAbsent(int64_t layer, const std::vector<int64_t> &slots);
  /// Clears the marks of slotMapping's slots in every layer: they are being written anew
  /// (a freed block may have held a skipping sequence).
  void clearAbsent(const torch::Tensor &slotMapping);
  /// `layer`'s map, or an undefined tensor when nothing was ever absent there.
  const torch::Tensor &absentOf(int64_t layer) const {
    static const torch::Tensor none;
    return size_t(layer) < absent.size() ? absent[size_t(layer)] : none;
  }

  /// Bytes one block takes over all layers (K and V).
  static int64_t bytesPerBlock(const schema::ModelConfig &config, int64_t blockSize,
                               torch::ScalarType dtype);
};

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_KVCACHE_H

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

  KVCache() = default;
  KVCache(const schema::ModelConfig &config, int64_t numBlocks, int64_t blockSize,
          torch::ScalarType dtype, torch::Device device = torch::kCPU);

  /// Bytes one block takes over all layers (K and V).
  static int64_t bytesPerBlock(const schema::ModelConfig &config, int64_t blockSize,
                               torch::ScalarType dtype);
};

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_KVCACHE_H

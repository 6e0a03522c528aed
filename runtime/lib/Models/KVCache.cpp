//===- KVCache.cpp - paged K/V tensors of every layer -----------*- C++ -*-===//

#include "nnsc/Runtime/Models/KVCache.h"

namespace nnsc {

KVCache::KVCache(const schema::ModelConfig &c, int64_t numBlocks, int64_t blockSize,
                 torch::ScalarType dtype, torch::Device device) {
  auto options = torch::TensorOptions().dtype(dtype).device(device);
  for (int64_t i = 0; i < c.layers; ++i) {
    k.push_back(torch::zeros({numBlocks, blockSize, c.kvHeads, c.headDim}, options));
    v.push_back(torch::zeros({numBlocks, blockSize, c.kvHeads, c.headDim}, options));
  }
}

int64_t KVCache::bytesPerBlock(const schema::ModelConfig &c, int64_t blockSize,
                               torch::ScalarType dtype) {
  return 2 * c.layers * blockSize * c.kvHeads * c.headDim * int64_t(c10::elementSize(dtype));
}

} // namespace nnsc

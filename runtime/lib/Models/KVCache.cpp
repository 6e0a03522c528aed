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

void KVCache::markAbsent(int64_t layer, const std::vector<int64_t> &slots) {
  TORCH_CHECK(layer >= 0 && size_t(layer) < k.size(), "KVCache::markAbsent: no layer ", layer);
  if (absent.size() < k.size())
    absent.resize(k.size());
  torch::Tensor &map = absent[size_t(layer)];
  if (!map.defined())
    map = torch::zeros({k[size_t(layer)].size(0) * k[size_t(layer)].size(1)}, torch::kUInt8);
  uint8_t *m = map.data_ptr<uint8_t>();
  for (int64_t slot : slots) {
    TORCH_CHECK(slot >= 0 && slot < map.numel(), "KVCache::markAbsent: slot ", slot,
                " outside the cache");
    m[slot] = 1;
  }
}

void KVCache::clearAbsent(const torch::Tensor &slotMapping) {
  if (absent.empty())
    return;
  const torch::Tensor slots = slotMapping.to(torch::kInt64).contiguous();
  const int64_t *s = slots.data_ptr<int64_t>();
  for (torch::Tensor &map : absent) {
    if (!map.defined())
      continue;
    uint8_t *m = map.data_ptr<uint8_t>();
    for (int64_t i = 0; i < slots.numel(); ++i)
      if (s[i] >= 0 && s[i] < map.numel())
        m[s[i]] = 0;
  }
}

int64_t KVCache::bytesPerBlock(const schema::ModelConfig &c, int64_t blockSize,
                               torch::ScalarType dtype) {
  return 2 * c.layers * blockSize * c.kvHeads * c.headDim * int64_t(c10::elementSize(dtype));
}

} // namespace nnsc

//===- KVCache.cpp - paged K/V tensors of every layer -----------*- C++ -*-===//

#include "nnsc/Runtime/Models/KVCache.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace nnsc {

namespace {

/// A zero-filled tensor whose memory the OS backs only as it is written: anonymous pages read
/// as zeros and take no memory until first touched. torch::zeros would touch every page of a
/// cache sized for the worst case (1024 blocks of SmolLM2 in fp32: 755 MB), so the process
/// would be charged for all of it from the start; this way its resident size follows the
/// tokens actually cached. CPU only; device memory is allocated (and zeroed) by the backend.
torch::Tensor lazyZeros(at::IntArrayRef sizes, torch::ScalarType dtype) {
  size_t bytes = c10::elementSize(dtype);
  for (int64_t s : sizes)
    bytes *= size_t(s);
  if (bytes == 0)
    return torch::zeros(sizes, torch::TensorOptions().dtype(dtype));
  void *data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TORCH_CHECK(data != MAP_FAILED, "cannot reserve ", bytes,
              " bytes for the KV cache: ", std::strerror(errno));
  return torch::from_blob(
      data, sizes, [bytes](void *p) { ::munmap(p, bytes); }, torch::TensorOptions().dtype(dtype));
}

} // namespace

KVCache::KVCache(const schema::ModelConfig &c, int64_t numBlocks, int64_t blockSize,
                 torch::ScalarType dtype, torch::Device device) {
  auto options = torch::TensorOptions().dtype(dtype).device(device);
  auto layerCache = [&] {
    std::vector<int64_t> sizes{numBlocks, blockSize, c.kvHeads, c.headDim};
    return device.is_cpu() ? lazyZeros(sizes, dtype) : torch::zeros(sizes, options);
  };
  for (int64_t i = 0; i < c.layers; ++i) {
    k.push_back(layerCache());
    v.push_back(layerCache());
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
  const torch::Tensor slots = slotMapping.to(torch::kCPU, torch::kInt64).contiguous();
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

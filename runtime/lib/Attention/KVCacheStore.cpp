//===- KVCacheStore.cpp - Writing K/V into the paged cache ------*- C++ -*-===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <ATen/Parallel.h>

#include <cstring>

namespace nnsc {

namespace {

template <typename Index>
void storeRows(const torch::Tensor &key, const torch::Tensor &value, torch::Tensor &kCache,
               torch::Tensor &vCache, const torch::Tensor &slotMapping) {
  const Index *slots = slotMapping.data_ptr<Index>();
  const int64_t numSlots = kCache.size(0) * kCache.size(1);
  for (int64_t r = 0; r < slotMapping.size(0); ++r)
    TORCH_CHECK(slots[r] < numSlots, "storeKVCache: slotMapping[", r, "] = ", slots[r],
                " is outside the cache's ", numSlots, " slots");
  // One token's K (or V) for all KV heads is contiguous in both the input and the cache.
  const int64_t rowBytes = key.size(1) * key.size(2) * key.element_size();
  const auto *k = static_cast<const char *>(key.data_ptr());
  const auto *v = static_cast<const char *>(value.data_ptr());
  auto *kc = static_cast<char *>(kCache.data_ptr());
  auto *vc = static_cast<char *>(vCache.data_ptr());
  at::parallel_for(0, slotMapping.size(0), 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (slots[r] < 0)
        continue;
      std::memcpy(kc + slots[r] * rowBytes, k + r * rowBytes, rowBytes);
      std::memcpy(vc + slots[r] * rowBytes, v + r * rowBytes, rowBytes);
    }
  });
}

} // namespace

void storeKVCache(const torch::Tensor &key, const torch::Tensor &value, torch::Tensor &kCache,
                  torch::Tensor &vCache, const torch::Tensor &slotMapping) {
  TORCH_CHECK(key.dim() == 3, "storeKVCache: key must be [tokens, num_kv_heads, head_dim], got ",
              key.sizes());
  TORCH_CHECK(value.sizes() == key.sizes(), "storeKVCache: value ", value.sizes(),
              " differs from key ", key.sizes());
  TORCH_CHECK(kCache.dim() == 4 && vCache.sizes() == kCache.sizes(),
              "storeKVCache: kCache and vCache must both be [num_blocks, block_size, "
              "num_kv_heads, head_dim], got ",
              kCache.sizes(), " and ", vCache.sizes());
  TORCH_CHECK(kCache.size(2) == key.size(1) && kCache.size(3) == key.size(2),
              "storeKVCache: key rows are [", key.size(1), ", ", key.size(2),
              "] but cache rows are [", kCache.size(2), ", ", kCache.size(3), "]");
  TORCH_CHECK(key.scalar_type() == kCache.scalar_type() &&
                  value.scalar_type() == kCache.scalar_type() &&
                  vCache.scalar_type() == kCache.scalar_type(),
              "storeKVCache: key, value and caches must have one dtype, got ", key.scalar_type(),
              ", ", value.scalar_type(), ", ", kCache.scalar_type(), ", ", vCache.scalar_type());
  TORCH_CHECK(kCache.is_contiguous() && vCache.is_contiguous(),
              "storeKVCache: kCache and vCache must be contiguous");
  TORCH_CHECK(key.device().is_cpu() && value.device().is_cpu() && kCache.device().is_cpu() &&
                  vCache.device().is_cpu() && slotMapping.device().is_cpu(),
              "storeKVCache: tensors must be on the CPU");
  TORCH_CHECK(slotMapping.dim() == 1 && slotMapping.size(0) == key.size(0),
              "storeKVCache: slotMapping must be [", key.size(0), "], got ", slotMapping.sizes());
  torch::Tensor k = key.contiguous();
  torch::Tensor v = value.contiguous();
  torch::Tensor slots = slotMapping.contiguous();
  if (slots.scalar_type() == torch::kInt64)
    storeRows<int64_t>(k, v, kCache, vCache, slots);
  else if (slots.scalar_type() == torch::kInt32)
    storeRows<int32_t>(k, v, kCache, vCache, slots);
  else
    TORCH_CHECK(false, "storeKVCache: slotMapping must be int32 or int64, got ",
                slots.scalar_type());
}

} // namespace nnsc

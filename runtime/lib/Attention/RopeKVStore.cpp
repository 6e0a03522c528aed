//===- RopeKVStore.cpp - RoPE fused with the KV-cache store -----*- C++ -*-===//
//
// The unfused path runs about eight LibTorch ops per layer (narrow, neg, cat, two muls, add,
// for q and k, then a contiguous copy and the store), each a dispatch and a fresh tensor.
// Here one parallel pass over the rows rotates q into a new tensor and writes the rotated k
// and v into their cache slots. The file is compiled with -ffp-contract=off: a fused
// multiply-add would round x * cos + r * sin once instead of three times and break the
// bit-for-bit match with the unfused ops.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <ATen/Parallel.h>

#include <cstring>
#include <initializer_list>

namespace nnsc {

namespace {

/// x * c - y * s with the products and the difference rounded to T, as LibTorch computes
/// x * c + (-y) * s elementwise in T.
template <typename T> inline T rotate(T x, T c, T y, T s) {
  float a = static_cast<float>(static_cast<T>(static_cast<float>(x) * static_cast<float>(c)));
  float b = static_cast<float>(static_cast<T>(static_cast<float>(y) * static_cast<float>(s)));
  return static_cast<T>(a - b);
}

/// y * c + x * s, rounded as above.
template <typename T> inline T rotateBack(T x, T y, T c, T s) {
  float a = static_cast<float>(static_cast<T>(static_cast<float>(y) * static_cast<float>(c)));
  float b = static_cast<float>(static_cast<T>(static_cast<float>(x) * static_cast<float>(s)));
  return static_cast<T>(a + b);
}

/// Rotates `heads` contiguous head vectors of one token from `src` into `dst`.
template <typename T>
void rotateHeads(const T *src, T *dst, const T *cos, const T *sin, int64_t heads, int64_t dim) {
  const int64_t half = dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    const T *x = src + h * dim;
    T *out = dst + h * dim;
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) {
      out[i] = rotate(x[i], cos[i], x[i + half], sin[i]);
      out[i + half] = rotateBack(x[i], x[i + half], cos[i + half], sin[i + half]);
    }
  }
}

template <typename T, typename Index>
void run(const torch::Tensor &q, const torch::Tensor &key, const torch::Tensor &value,
         const torch::Tensor &cos, const torch::Tensor &sin, torch::Tensor &kCache,
         torch::Tensor &vCache, const torch::Tensor &slotMapping, torch::Tensor &out) {
  const int64_t numTokens = q.size(0), heads = q.size(1), kvHeads = key.size(1);
  const int64_t dim = q.size(2);
  const Index *slots = slotMapping.data_ptr<Index>();
  const int64_t numSlots = kCache.size(0) * kCache.size(1);
  for (int64_t r = 0; r < numTokens; ++r)
    TORCH_CHECK(slots[r] < numSlots, "ropeAndStoreKV: slotMapping[", r, "] = ", slots[r],
                " is outside the cache's ", numSlots, " slots");
  const T *qPtr = q.data_ptr<T>(), *kPtr = key.data_ptr<T>(), *vPtr = value.data_ptr<T>();
  const T *cosPtr = cos.data_ptr<T>(), *sinPtr = sin.data_ptr<T>();
  T *outPtr = out.data_ptr<T>();
  T *kc = kCache.data_ptr<T>(), *vc = vCache.data_ptr<T>();
  const int64_t qStride = q.stride(0), kStride = key.stride(0), vStride = value.stride(0);
  const int64_t kvRow = kvHeads * dim;
  // A decode step has one row per sequence: a few hundred rows of ~1 KB are too little work
  // to split finer.
  at::parallel_for(0, numTokens, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T *c = cosPtr + r * dim, *s = sinPtr + r * dim;
      rotateHeads(qPtr + r * qStride, outPtr + r * heads * dim, c, s, heads, dim);
      if (slots[r] < 0)
        continue;
      rotateHeads(kPtr + r * kStride, kc + slots[r] * kvRow, c, s, kvHeads, dim);
      std::memcpy(vc + slots[r] * kvRow, vPtr + r * vStride, kvRow * sizeof(T));
    }
  });
}

/// True when `t` is [rows, heads, dim] with heads and dims packed (rows may be strided).
bool packedRows(const torch::Tensor &t) {
  return t.stride(2) == 1 && t.stride(1) == t.size(2) && t.stride(0) >= t.size(1) * t.size(2);
}

} // namespace

torch::Tensor ropeAndStoreKV(const torch::Tensor &query, const torch::Tensor &key,
                             const torch::Tensor &value, const torch::Tensor &cosIn,
                             const torch::Tensor &sinIn, torch::Tensor &kCache,
                             torch::Tensor &vCache, const torch::Tensor &slotMapping) {
  const char *fn = "ropeAndStoreKV";
  TORCH_CHECK(query.dim() == 3, fn, ": q must be [tokens, num_heads, head_dim], got ",
              query.sizes());
  TORCH_CHECK(key.dim() == 3 && value.sizes() == key.sizes(), fn,
              ": key and value must both be [tokens, num_kv_heads, head_dim], got ", key.sizes(),
              " and ", value.sizes());
  const int64_t numTokens = query.size(0), dim = query.size(2);
  TORCH_CHECK(key.size(0) == numTokens && key.size(2) == dim, fn, ": key ", key.sizes(),
              " does not match q ", query.sizes(), " in tokens or head_dim");
  TORCH_CHECK(dim % 2 == 0, fn, ": head_dim must be even for RoPE, got ", dim);
  TORCH_CHECK(cosIn.dim() == 2 && cosIn.size(0) == numTokens && cosIn.size(1) == dim &&
                  sinIn.sizes() == cosIn.sizes(),
              fn, ": cos and sin must be [", numTokens, ", ", dim, "], got ", cosIn.sizes(),
              " and ", sinIn.sizes());
  TORCH_CHECK(kCache.dim() == 4 && vCache.sizes() == kCache.sizes(), fn,
              ": kCache and vCache must both be [num_blocks, block_size, num_kv_heads, "
              "head_dim], got ",
              kCache.sizes(), " and ", vCache.sizes());
  TORCH_CHECK(kCache.size(2) == key.size(1) && kCache.size(3) == dim, fn, ": key rows are [",
              key.size(1), ", ", dim, "] but cache rows are [", kCache.size(2), ", ",
              kCache.size(3), "]");
  const auto dtype = query.scalar_type();
  TORCH_CHECK(dtype == torch::kFloat32 || dtype == torch::kBFloat16, fn,
              ": only float32 and bfloat16 are supported, got ", dtype);
  const std::initializer_list<const torch::Tensor *> sameDtype = {&key,   &value,  &cosIn,
                                                                  &sinIn, &kCache, &vCache};
  for (const torch::Tensor *t : sameDtype)
    TORCH_CHECK(t->scalar_type() == dtype, fn,
                ": q, key, value, cos, sin and the caches must have one dtype, got ", dtype,
                " and ", t->scalar_type());
  const std::initializer_list<const torch::Tensor *> all = {&query, &key,    &value,  &cosIn,
                                                            &sinIn, &kCache, &vCache, &slotMapping};
  for (const torch::Tensor *t : all)
    TORCH_CHECK(t->device().is_cpu(), fn, ": tensors must be on the CPU");
  TORCH_CHECK(kCache.is_contiguous() && vCache.is_contiguous(), fn,
              ": kCache and vCache must be contiguous");
  TORCH_CHECK(slotMapping.dim() == 1 && slotMapping.size(0) == numTokens, fn,
              ": slotMapping must be [", numTokens, "], got ", slotMapping.sizes());

  torch::Tensor q = packedRows(query) ? query : query.contiguous();
  torch::Tensor k = packedRows(key) ? key : key.contiguous();
  torch::Tensor v = packedRows(value) ? value : value.contiguous();
  torch::Tensor cos = cosIn.contiguous(), sin = sinIn.contiguous();
  torch::Tensor slots = slotMapping.contiguous();
  torch::Tensor out = torch::empty(query.sizes(), query.options());
  const bool wide = slots.scalar_type() == torch::kInt64;
  TORCH_CHECK(wide || slots.scalar_type() == torch::kInt32, fn,
              ": slotMapping must be int32 or int64, got ", slots.scalar_type());
  if (dtype == torch::kFloat32) {
    if (wide)
      run<float, int64_t>(q, k, v, cos, sin, kCache, vCache, slots, out);
    else
      run<float, int32_t>(q, k, v, cos, sin, kCache, vCache, slots, out);
  } else {
    if (wide)
      run<c10::BFloat16, int64_t>(q, k, v, cos, sin, kCache, vCache, slots, out);
    else
      run<c10::BFloat16, int32_t>(q, k, v, cos, sin, kCache, vCache, slots, out);
  }
  return out;
}

} // namespace nnsc

//===- CudaKernels.cpp - the decoder's kernels on CUDA ----------*- C++ -*-===//

#include "nnsc/Runtime/Backend/CudaKernels.h"

#include "nnsc/Runtime/Kernels/PagedAttentionCuda.h"
#include "nnsc/Runtime/Kernels/PrefillAttentionCuda.h"
#include "nnsc/Runtime/Kernels/RMSNormCuda.h"
#include "nnsc/Runtime/Kernels/RopeCuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace nnsc {

namespace {

cudaStream_t currentStream(const torch::Tensor &t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

void checkLaunch(cudaError_t error, const char *kernel) {
  TORCH_CHECK(error == cudaSuccess, kernel, ": launch failed: ", cudaGetErrorString(error));
}

/// Checks that every tensor is defined and on `device`, naming the first that is not.
void checkDevice(const char *kernel, const torch::Device &device,
                 std::initializer_list<std::pair<const char *, const torch::Tensor *>> tensors) {
  TORCH_CHECK(device.is_cuda(), kernel, ": tensors must be on a CUDA device, got ", device);
  for (const auto &[name, tensor] : tensors) {
    TORCH_CHECK(tensor->defined(), kernel, ": ", name, " is undefined");
    TORCH_CHECK(tensor->device() == device, kernel, ": ", name, " is on ", tensor->device(),
                ", expected ", device);
  }
}

void checkFloat(const char *kernel, const torch::Tensor &t) {
  TORCH_CHECK(t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kBFloat16, kernel,
              ": tensors must be float32 or bfloat16, got ", t.scalar_type());
}

template <typename T> const T *ptr(const torch::Tensor &t) {
  return static_cast<const T *>(t.data_ptr());
}
template <typename T> T *mutablePtr(torch::Tensor &t) { return static_cast<T *>(t.data_ptr()); }

/// Calls `fn` with a null pointer of the CUDA element type of `dtype` (float or bf16).
template <typename Fn> void dispatchFloat(torch::ScalarType dtype, Fn &&fn) {
  if (dtype == torch::kBFloat16)
    fn(static_cast<__nv_bfloat16 *>(nullptr));
  else
    fn(static_cast<float *>(nullptr));
}

} // namespace

const CudaKernels &CudaKernels::get() {
  static const CudaKernels kernels;
  return kernels;
}

torch::Tensor CudaKernels::rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                                   double eps) const {
  checkDevice("rmsNorm", x.device(), {{"x", &x}, {"weight", &weight}});
  TORCH_CHECK(x.dim() == 2, "rmsNorm: x must be [tokens, hidden], got ", x.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1), "rmsNorm: weight must be [",
              x.size(1), "], got ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type(), "rmsNorm: weight is ", weight.scalar_type(),
              " but x is ", x.scalar_type());
  checkFloat("rmsNorm", x);
  c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor in = x.contiguous(), w = weight.contiguous();
  torch::Tensor out = torch::empty_like(in);
  dispatchFloat(x.scalar_type(), [&](auto *type) {
    using T = std::remove_pointer_t<decltype(type)>;
    if constexpr (std::is_same_v<T, float>)
      checkLaunch(kernels::rmsNormF32Cuda(ptr<T>(in), ptr<T>(w), mutablePtr<T>(out), in.size(0),
                                          in.size(1), float(eps), currentStream(in)),
                  "rmsNorm");
    else
      checkLaunch(kernels::rmsNormBF16Cuda(ptr<T>(in), ptr<T>(w), mutablePtr<T>(out), in.size(0),
                                           in.size(1), float(eps), currentStream(in)),
                  "rmsNorm");
  });
  return out;
}

torch::Tensor CudaKernels::rope(const torch::Tensor &x, const torch::Tensor &cos,
                                const torch::Tensor &sin) const {
  checkDevice("rope", x.device(), {{"x", &x}, {"cos", &cos}, {"sin", &sin}});
  TORCH_CHECK(x.dim() == 3, "rope: x must be [tokens, heads, head_dim], got ", x.sizes());
  TORCH_CHECK(cos.dim() == 2 && cos.size(0) == x.size(0) && cos.size(1) == x.size(2) &&
                  sin.sizes() == cos.sizes(),
              "rope: cos and sin must be [", x.size(0), ", ", x.size(2), "], got ", cos.sizes(),
              " and ", sin.sizes());
  TORCH_CHECK(cos.scalar_type() == x.scalar_type() && sin.scalar_type() == x.scalar_type(),
              "rope: x, cos and sin must have one dtype, got ", x.scalar_type(), ", ",
              cos.scalar_type(), ", ", sin.scalar_type());
  checkFloat("rope", x);
  c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor in = x.stride(2) == 1 ? x : x.contiguous();
  torch::Tensor c = cos.contiguous(), s = sin.contiguous();
  torch::Tensor out = torch::empty(in.sizes(), in.options());
  kernels::RopeShape shape{in.size(0), in.size(1), in.size(2), in.stride(0), in.stride(1)};
  dispatchFloat(x.scalar_type(), [&](auto *type) {
    using T = std::remove_pointer_t<decltype(type)>;
    checkLaunch(kernels::ropeCuda(ptr<T>(in), ptr<T>(c), ptr<T>(s), mutablePtr<T>(out), shape,
                                  currentStream(in)),
                "rope");
  });
  return out;
}

void CudaKernels::storeKVCache(const torch::Tensor &key, const torch::Tensor &value,
                               torch::Tensor &kCache, torch::Tensor &vCache,
                               const AttentionMetadata &meta) const {
  const torch::Tensor &slots = meta.slotMapping;
  checkDevice("storeKVCache", key.device(),
              {{"key", &key},
               {"value", &value},
               {"kCache", &kCache},
               {"vCache", &vCache},
               {"slotMapping", &slots}});
  TORCH_CHECK(key.dim() == 3, "storeKVCache: key must be [tokens, num_kv_heads, head_dim], got ",
              key.sizes());
  TORCH_CHECK(value.sizes() == key.sizes(), "storeKVCache: value ", value.sizes(),
              " differs from key ", key.sizes());
  TORCH_CHECK(kCache.dim() == 4 && vCache.sizes() == kCache.sizes() &&
                  kCache.size(2) == key.size(1) && kCache.size(3) == key.size(2),
              "storeKVCache: caches must be [num_blocks, block_size, ", key.size(1), ", ",
              key.size(2), "], got ", kCache.sizes(), " and ", vCache.sizes());
  TORCH_CHECK(key.scalar_type() == kCache.scalar_type() &&
                  value.scalar_type() == kCache.scalar_type() &&
                  vCache.scalar_type() == kCache.scalar_type(),
              "storeKVCache: key, value and caches must have one dtype");
  TORCH_CHECK(kCache.is_contiguous() && vCache.is_contiguous(),
              "storeKVCache: kCache and vCache must be contiguous");
  TORCH_CHECK(slots.dim() == 1 && slots.size(0) == key.size(0) &&
                  slots.scalar_type() == torch::kInt64,
              "storeKVCache: slotMapping must be [", key.size(0), "] int64, got ", slots.sizes(),
              " ", slots.scalar_type());
  checkFloat("storeKVCache", key);
  c10::cuda::CUDAGuard guard(key.device());
  torch::Tensor k = key.contiguous(), v = value.contiguous(), s = slots.contiguous();
  dispatchFloat(key.scalar_type(), [&](auto *type) {
    using T = std::remove_pointer_t<decltype(type)>;
    checkLaunch(kernels::storeKVCacheCuda(ptr<T>(k), ptr<T>(v), mutablePtr<T>(kCache),
                                          mutablePtr<T>(vCache), s.data_ptr<int64_t>(), k.size(0),
                                          k.size(1), k.size(2), currentStream(k)),
                "storeKVCache");
  });
}

torch::Tensor CudaKernels::attention(const torch::Tensor &q, const torch::Tensor &kCache,
                                     const torch::Tensor &vCache, const AttentionMetadata &meta,
                                     double scale, const torch::Tensor &absent,
                                     int64_t window) const {
  const char *name = meta.isPrefill ? "prefillAttention" : "decodeAttention";
  TORCH_CHECK(window == 0, name,
              ": the CUDA kernels have no sliding window yet (a local layer of window ", window,
              "); run this model on the CPU");
  TORCH_CHECK(!absent.defined() || (absent.scalar_type() == torch::kUInt8 &&
                                    absent.numel() == kCache.size(0) * kCache.size(1)),
              name, ": absent must be uint8 of num_blocks * block_size (",
              kCache.size(0) * kCache.size(1), "), got ", absent.sizes());
  checkDevice(
      name, q.device(),
      {{"q", &q}, {"kCache", &kCache}, {"vCache", &vCache}, {"blockTables", &meta.blockTables}});
  TORCH_CHECK(q.dim() == 3, name, ": q must be [tokens, num_heads, head_dim], got ", q.sizes());
  TORCH_CHECK(kCache.dim() == 4 && vCache.sizes() == kCache.sizes() && kCache.size(3) == q.size(2),
              name, ": caches must be [num_blocks, block_size, num_kv_heads, ", q.size(2),
              "], got ", kCache.sizes(), " and ", vCache.sizes());
  TORCH_CHECK(kCache.size(2) > 0 && q.size(1) % kCache.size(2) == 0, name, ": ", q.size(1),
              " query heads are not a multiple of ", kCache.size(2), " KV heads");
  TORCH_CHECK(q.size(2) <= kernels::kMaxCudaHeadDim, name, ": head_dim ", q.size(2),
              " exceeds the CUDA kernels' ", kernels::kMaxCudaHeadDim);
  TORCH_CHECK(q.scalar_type() == kCache.scalar_type() &&
                  vCache.scalar_type() == kCache.scalar_type(),
              name, ": q and caches must have one dtype");
  TORCH_CHECK(kCache.is_contiguous() && vCache.is_contiguous(), name,
              ": kCache and vCache must be contiguous");
  TORCH_CHECK(meta.blockTables.dim() == 2 && meta.blockTables.scalar_type() == torch::kInt32, name,
              ": blockTables must be [num_seqs, max_blocks] int32");
  checkFloat(name, q);
  c10::cuda::CUDAGuard guard(q.device());
  torch::Tensor query = q.contiguous(), tables = meta.blockTables.contiguous();
  torch::Tensor out = torch::empty(query.sizes(), query.options());
  const float s = float(scale);
  // The skipped rows' slots (KVCache keeps the map on the host; only layers with a skip have
  // one, so plain steps copy nothing).
  torch::Tensor absentOnDevice = absent.defined() ? absent.to(q.device()).contiguous() : absent;
  const uint8_t *absentSlots =
      absentOnDevice.defined() ? absentOnDevice.data_ptr<uint8_t>() : nullptr;
  if (meta.isPrefill) {
    checkDevice(name, q.device(),
                {{"cuSeqlensQ", &meta.cuSeqlensQ}, {"cuSeqlensK", &meta.cuSeqlensK}});
    const int64_t numSeqs = tables.size(0);
    TORCH_CHECK(meta.cuSeqlensQ.numel() == numSeqs + 1 && meta.cuSeqlensK.numel() == numSeqs + 1 &&
                    meta.cuSeqlensQ.scalar_type() == torch::kInt32 &&
                    meta.cuSeqlensK.scalar_type() == torch::kInt32,
                name, ": cuSeqlensQ and cuSeqlensK must be [", numSeqs + 1, "] int32");
    TORCH_CHECK(meta.maxSeqlenQ >= 0 && meta.maxSeqlenQ <= query.size(0), name, ": maxSeqlenQ ",
                meta.maxSeqlenQ, " is not in [0, ", query.size(0), "]");
    kernels::PrefillAttentionShape shape{query.size(0),  numSeqs,        query.size(1),
                                         kCache.size(2), query.size(2),  kCache.size(1),
                                         tables.size(1), meta.maxSeqlenQ};
    torch::Tensor cuQ = meta.cuSeqlensQ.contiguous(), cuK = meta.cuSeqlensK.contiguous();
    dispatchFloat(q.scalar_type(), [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      checkLaunch(kernels::prefillAttentionCuda(ptr<T>(query), ptr<T>(kCache), ptr<T>(vCache),
                                                cuQ.data_ptr<int32_t>(), cuK.data_ptr<int32_t>(),
                                                tables.data_ptr<int32_t>(), absentSlots,
                                                mutablePtr<T>(out), shape, s, currentStream(query)),
                  name);
    });
    return out;
  }
  checkDevice(name, q.device(), {{"contextLens", &meta.contextLens}});
  TORCH_CHECK(meta.contextLens.dim() == 1 && meta.contextLens.size(0) == query.size(0) &&
                  meta.contextLens.scalar_type() == torch::kInt32 &&
                  tables.size(0) == query.size(0),
              name, ": a decode step has one query per sequence: ", query.size(0),
              " queries, contextLens ", meta.contextLens.sizes(), ", blockTables ", tables.sizes());
  kernels::DecodeAttentionShape shape{query.size(0), query.size(1),  kCache.size(2),
                                      query.size(2), kCache.size(1), tables.size(1)};
  torch::Tensor lens = meta.contextLens.contiguous();
  dispatchFloat(q.scalar_type(), [&](auto *type) {
    using T = std::remove_pointer_t<decltype(type)>;
    checkLaunch(kernels::decodeAttentionCuda(ptr<T>(query), ptr<T>(kCache), ptr<T>(vCache),
                                             lens.data_ptr<int32_t>(), tables.data_ptr<int32_t>(),
                                             absentSlots, mutablePtr<T>(out), shape, s,
                                             currentStream(query)),
                name);
  });
  return out;
}

} // namespace nnsc

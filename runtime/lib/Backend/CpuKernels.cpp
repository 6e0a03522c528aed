//===- CpuKernels.cpp - the decoder's kernels on the CPU --------*- C++ -*-===//

#include "nnsc/Runtime/Backend/CpuKernels.h"

#include "nnsc/Runtime/Attention/PagedAttention.h"
#include "nnsc/Runtime/Layers/RMSNorm.h"
#include "nnsc/Runtime/Layers/RotaryEmbedding.h"

namespace nnsc {

const CpuKernels &CpuKernels::get() {
  static const CpuKernels kernels;
  return kernels;
}

torch::Tensor CpuKernels::rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                                  double eps) const {
  return nnsc::rmsNorm(x, weight, eps);
}

torch::Tensor CpuKernels::rope(const torch::Tensor &x, const torch::Tensor &cos,
                               const torch::Tensor &sin) const {
  return RotaryEmbedding::apply(x, cos, sin);
}

void CpuKernels::storeKVCache(const torch::Tensor &key, const torch::Tensor &value,
                              torch::Tensor &kCache, torch::Tensor &vCache,
                              const AttentionMetadata &meta) const {
  nnsc::storeKVCache(key, value, kCache, vCache, meta.slotMapping);
}

torch::Tensor CpuKernels::ropeAndStoreKV(const torch::Tensor &q, const torch::Tensor &k,
                                         const torch::Tensor &v, const torch::Tensor &cos,
                                         const torch::Tensor &sin, torch::Tensor &kCache,
                                         torch::Tensor &vCache,
                                         const AttentionMetadata &meta) const {
  return nnsc::ropeAndStoreKV(q, k, v, cos, sin, kCache, vCache, meta.slotMapping);
}

torch::Tensor CpuKernels::attention(const torch::Tensor &q, const torch::Tensor &kCache,
                                    const torch::Tensor &vCache, const AttentionMetadata &meta,
                                    double scale, const torch::Tensor &absent,
                                    int64_t window) const {
  return pagedAttention(q, kCache, vCache, meta, scale, absent, window);
}

} // namespace nnsc

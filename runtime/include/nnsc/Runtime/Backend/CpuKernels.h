//===- CpuKernels.h - the decoder's kernels on the CPU ----------*- C++ -*-===//

#ifndef NNSC_RUNTIME_BACKEND_CPUKERNELS_H
#define NNSC_RUNTIME_BACKEND_CPUKERNELS_H

#include "nnsc/Runtime/Models/DeviceKernels.h"

namespace nnsc {

/// The CPU kernels: nnsc::rmsNorm, RotaryEmbedding::apply, storeKVCache, ropeAndStoreKV
/// (the two fused) and pagedAttention.
class CpuKernels final : public DeviceKernels {
public:
  /// The one instance (the kernels hold no state).
  static const CpuKernels &get();

  torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                        double eps) const override;
  torch::Tensor rope(const torch::Tensor &x, const torch::Tensor &cos,
                     const torch::Tensor &sin) const override;
  void storeKVCache(const torch::Tensor &key, const torch::Tensor &value, torch::Tensor &kCache,
                    torch::Tensor &vCache, const AttentionMetadata &meta) const override;
  torch::Tensor ropeAndStoreKV(const torch::Tensor &q, const torch::Tensor &k,
                               const torch::Tensor &v, const torch::Tensor &cos,
                               const torch::Tensor &sin, torch::Tensor &kCache,
                               torch::Tensor &vCache, const AttentionMetadata &meta) const override;
  torch::Tensor attention(const torch::Tensor &q, const torch::Tensor &kCache,
                          const torch::Tensor &vCache, const AttentionMetadata &meta, double scale,
                          const torch::Tensor &absent = {}, int64_t window = 0) const override;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CPUKERNELS_H

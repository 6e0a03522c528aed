//===- CudaKernels.h - the decoder's kernels on CUDA ------------*- C++ -*-===//
//
// LibTorch wrappers of the .cu kernels (runtime/kernels/cuda): they check shapes, dtypes and
// devices with TORCH_CHECK like the CPU kernels, then launch on the current torch CUDA stream
// of the tensors' device. Part of the CUDA backend library only.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_CUDAKERNELS_H
#define NNSC_RUNTIME_BACKEND_CUDAKERNELS_H

#include "nnsc/Runtime/Models/DeviceKernels.h"

namespace nnsc {

/// The CUDA kernels; every tensor (metadata included) must be on one CUDA device.
class CudaKernels final : public DeviceKernels {
public:
  /// The one instance (the kernels hold no state).
  static const CudaKernels &get();

  torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                        double eps) const override;
  torch::Tensor rope(const torch::Tensor &x, const torch::Tensor &cos,
                     const torch::Tensor &sin) const override;
  void storeKVCache(const torch::Tensor &key, const torch::Tensor &value, torch::Tensor &kCache,
                    torch::Tensor &vCache, const AttentionMetadata &meta) const override;
  torch::Tensor attention(const torch::Tensor &q, const torch::Tensor &kCache,
                          const torch::Tensor &vCache, const AttentionMetadata &meta, double scale,
                          const torch::Tensor &absent = {}, int64_t window = 0) const override;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_CUDAKERNELS_H

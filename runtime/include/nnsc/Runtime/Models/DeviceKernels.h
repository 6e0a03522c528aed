//===- DeviceKernels.h - the device-specific kernels of the decoder -*- C++ -*-===//
//
// The few operations of CausalLM's forward pass that have a hand-written kernel per device:
// RMSNorm, RoPE, the KV-cache store (optionally fused with RoPE) and paged attention.
// Everything else (GEMMs, SiLU, residual adds, embedding) is a LibTorch op that runs wherever
// its tensors are. The model declares them; each backend implements them for its device
// (Backend/CpuKernels.h, Backend/CudaKernels.h) and gives its CausalLM one.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_DEVICEKERNELS_H
#define NNSC_RUNTIME_MODELS_DEVICEKERNELS_H

#include "nnsc/Runtime/Attention/AttentionMetadata.h"

#include <torch/torch.h>

namespace nnsc {

/// Kernels of one device; every tensor argument lives on that device.
class DeviceKernels {
public:
  virtual ~DeviceKernels() = default;

  /// Llama RMSNorm: x [tokens, hidden], weight [hidden] -> [tokens, hidden].
  virtual torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                                double eps) const = 0;
  /// Half-split RoPE: x [tokens, heads, head_dim], cos/sin [tokens, head_dim].
  virtual torch::Tensor rope(const torch::Tensor &x, const torch::Tensor &cos,
                             const torch::Tensor &sin) const = 0;
  /// Writes key/value [tokens, kv_heads, head_dim] into the caches
  /// [num_blocks, block_size, kv_heads, head_dim] at meta.slotMapping.
  virtual void storeKVCache(const torch::Tensor &key, const torch::Tensor &value,
                            torch::Tensor &kCache, torch::Tensor &vCache,
                            const AttentionMetadata &meta) const = 0;
  /// RoPE on q and k, then the rotated k and v stored as storeKVCache stores them; returns
  /// the rotated q. A device with a fused kernel overrides this; the default runs the
  /// separate kernels.
  virtual torch::Tensor ropeAndStoreKV(const torch::Tensor &q, const torch::Tensor &k,
                                       const torch::Tensor &v, const torch::Tensor &cos,
                                       const torch::Tensor &sin, torch::Tensor &kCache,
                                       torch::Tensor &vCache, const AttentionMetadata &meta) const {
    storeKVCache(rope(k, cos, sin).contiguous(), v.contiguous(), kCache, vCache, meta);
    return rope(q, cos, sin);
  }
  /// The step's paged attention (varlen prefill or decode, as meta.isPrefill says):
  /// q [tokens, heads, head_dim] -> [tokens, heads, head_dim]. `absent`, when defined, marks
  /// the cache slots this layer has no K/V for (pagedAttention's `absent`); only devices
  /// that run bundles (the CPU) need to take it. `window` > 0 is a sliding window: the query
  /// at position p sees positions (p - window, p] only (a local layer); 0 sees all.
  virtual torch::Tensor attention(const torch::Tensor &q, const torch::Tensor &kCache,
                                  const torch::Tensor &vCache, const AttentionMetadata &meta,
                                  double scale, const torch::Tensor &absent = {},
                                  int64_t window = 0) const = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_DEVICEKERNELS_H

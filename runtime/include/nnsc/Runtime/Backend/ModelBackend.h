//===- ModelBackend.h - the model/backend interface of the engine -*- C++ -*-===//
//
// What ModelRunner and LLMEngine see of a model, after the Tenstorrent vLLM integration:
// a backend is initialized with the model's weights (its constructor), allocates the paged KV
// cache, runs prefill and decode steps over the flat batch, and declares its capabilities.
// The CPU backend and the CUDA backend plug in the same way; the engine never touches a
// device.
//
// A step's inputs are always on the CPU (token ids and the AttentionMetadata built from the
// scheduled batch) and its logits come back on the CPU in fp32, so the sampler, the
// scheduler and the sequence-level hook phases run unchanged on every backend. Token-level
// hooks see the backend's device tensors.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_MODELBACKEND_H
#define NNSC_RUNTIME_BACKEND_MODELBACKEND_H

#include "nnsc/Runtime/Attention/AttentionMetadata.h"
#include "nnsc/Runtime/Backend/BackendCapabilities.h"
#include "nnsc/Runtime/Hooks/HookDispatch.h"
#include "nnsc/Schema/Architecture.h"
#include "nnsc/Schema/ModelConfig.h"

#include <torch/torch.h>

#include <memory>

namespace nnsc {

class Bundle;
class CausalLM;
class DeviceKernelLauncher;
class TensorParallelGroup;

/// A model ready to run on one device.
class ModelBackend {
public:
  virtual ~ModelBackend() = default;

  virtual BackendCapabilities capabilities() const = 0;
  virtual const schema::ModelConfig &config() const = 0;
  virtual const schema::Architecture &architecture() const = 0;
  /// The compute dtype of the weights and the KV cache.
  virtual torch::ScalarType dtype() const = 0;
  /// The model the forward pass runs, with its weights on this backend's device: what bundle
  /// module calls (`norm(h)`) run on.
  virtual std::shared_ptr<const CausalLM> causalLM() const = 0;
  /// What runs `bundle`'s kernels at sites whose value this backend keeps on a device; null
  /// when every site value is on the CPU (the host kernels run). Throws BackendError when the
  /// bundle cannot run here (a CPU-only bundle on a GPU backend).
  virtual std::shared_ptr<DeviceKernelLauncher>
  bundleLauncher(std::shared_ptr<const Bundle> bundle) const;
  /// The ranks the model is split over (tensor parallelism), or null. Every rank runs the
  /// same engine steps; rank 0's batch is checked on the others and its samples are used.
  virtual TensorParallelGroup *tensorParallel() const { return nullptr; }

  /// Allocates (or reallocates, dropping its contents) the paged KV cache of every layer:
  /// [numBlocks, blockSize, kv_heads, head_dim] for K and for V.
  void allocateKVCache(int64_t numBlocks, int64_t blockSize);
  int64_t numKVBlocks() const { return kvBlocks; }
  int64_t kvBlockSize() const { return kvBlockTokens; }

  /// Runs a prefill step (meta.isPrefill): `tokens` [total_tokens] int64 on the CPU, any
  /// number of query rows per sequence, attending to the cached tokens before them.
  /// Returns the logits [meta.sampleRows, vocab], fp32, on the CPU. `hooks` may be null.
  torch::Tensor prefillForward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                               const HookDispatch *hooks);
  /// Runs a decode step (!meta.isPrefill): one query row per sequence. Same contract as
  /// prefillForward.
  torch::Tensor decodeForward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                              const HookDispatch *hooks);

protected:
  virtual void allocateCache(int64_t numBlocks, int64_t blockSize) = 0;
  /// The step on the device, after the common checks of the public entry points.
  virtual torch::Tensor forward(const torch::Tensor &tokens, const AttentionMetadata &meta,
                                const HookDispatch *hooks) = 0;

private:
  void checkStep(const char *entry, const torch::Tensor &tokens,
                 const AttentionMetadata &meta) const;

  int64_t kvBlocks = 0;
  int64_t kvBlockTokens = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_MODELBACKEND_H

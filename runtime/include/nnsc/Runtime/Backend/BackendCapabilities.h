//===- BackendCapabilities.h - what a model backend supports ----*- C++ -*-===//
//
// Declared by each backend, read by the engine to fit its scheduler to the backend (as vLLM
// reads a platform's capabilities) and by tools to refuse options a backend cannot serve.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_BACKENDCAPABILITIES_H
#define NNSC_RUNTIME_BACKEND_BACKENDCAPABILITIES_H

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace nnsc {

/// The static properties of a model backend.
struct BackendCapabilities {
  /// Where the weights, the KV cache and the forward pass live.
  torch::Device device = torch::kCPU;
  /// Compute dtypes the backend runs (kFloat32, kBFloat16).
  std::vector<torch::ScalarType> dtypes;
  /// Prefill attends to K/V already in the cache (prefix-cache hits, chunked prefill).
  bool prefixCaching = false;
  /// Sequences one step may hold; 0 means no limit beyond the scheduler's.
  int64_t maxNumSeqs = 0;
  /// Bundles may run at the backend's hook points: their host kernels where a site value is
  /// on the CPU, their device copies through ModelBackend::bundleLauncher where it is on a
  /// device. Site hooks written with LibTorch ops run on every backend.
  bool bundleKernels = false;
  /// Requests may ask for batch-invariant mode (SamplingParams::batchInvariant): the backend's
  /// kernels then compute every row in an order that depends on that row alone.
  bool batchInvariant = false;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_BACKENDCAPABILITIES_H

//===- PrefillAttention.cu - varlen paged prefill in CUDA -------*- CUDA -*-===//
//
// Three kernels, one contract (PrefillAttentionCuda.h), chosen per launch:
//
// - bf16 with head dim 64 or 128 on compute capability 8.0 and above: the tensor-core kernel
//   (PrefillAttentionMma.cu), unless NNSC_CUDA_PREFILL=simt asks for the SIMT one;
// - head dims 32, 64, 96 and 128 otherwise: the SIMT tiled kernel (PrefillAttentionSimt.cu);
// - any other head dim (up to kMaxCudaHeadDim), pointers not aligned for 16-byte vectors, or
//   an unknown longest query: the row kernel here, one thread block per (query row, head)
//   running the query loop of PagedAttentionCommon.cuh.
//
// Every query reads its K/V from the cache, so a cached prefix and earlier chunks need
// nothing special. docs/Backends.md, "Prefill attention", has the measurements.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/PrefillAttentionCuda.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include "PagedAttentionCommon.cuh"
#include "PrefillTiles.cuh"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <type_traits>

namespace nnsc::kernels {
namespace {

using detail::kAttentionThreads;

/// Whether the current device has bf16 tensor cores (compute capability 8.0 or above). Asked
/// once per device, not at every layer's launch.
bool hasBf16TensorCores() {
  constexpr int kKnownDevices = 64;
  static std::atomic<int8_t> known[kKnownDevices] = {}; // 0 unknown, 1 yes, -1 no
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess)
    return false;
  if (device < kKnownDevices && known[device].load(std::memory_order_relaxed) != 0)
    return known[device].load(std::memory_order_relaxed) > 0;
  const bool has =
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 8;
  if (device < kKnownDevices)
    known[device].store(has ? 1 : -1, std::memory_order_relaxed);
  return has;
}

/// NNSC_CUDA_PREFILL=simt keeps bf16 off the tensor-core kernel (RuntimeOptions).
bool tensorCoresAllowed() { return !RuntimeOptions::get().cudaPrefillSimt; }

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads)
    rowPrefillKernel(const T *__restrict__ q, const T *__restrict__ kCache,
                     const T *__restrict__ vCache, const int32_t *__restrict__ cuSeqlensQ,
                     const int32_t *__restrict__ cuSeqlensK,
                     const int32_t *__restrict__ blockTables, const uint8_t *__restrict__ absent,
                     T *__restrict__ out, PrefillAttentionShape shape, float scale) {
  const int64_t row = blockIdx.x, head = blockIdx.y;
  // The last sequence whose first row is at or before `row` (sequences with no rows this
  // step share their first row with the next one and are skipped).
  int64_t lo = 0, hi = shape.numSeqs - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (cuSeqlensQ[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t seq = lo;
  const int64_t queries = cuSeqlensQ[seq + 1] - cuSeqlensQ[seq];
  const int64_t keys = cuSeqlensK[seq + 1] - cuSeqlensK[seq];
  const int64_t contextLen = keys - queries + (row - cuSeqlensQ[seq]) + 1;
  const int64_t offset = (row * shape.numHeads + head) * shape.headDim;
  detail::attendQuery(q + offset, kCache, vCache, blockTables + seq * shape.maxBlocksPerSeq, absent,
                      contextLen, head / (shape.numHeads / shape.numKvHeads), out + offset,
                      detail::CacheShape{shape.numKvHeads, shape.headDim, shape.blockSize}, scale);
}

template <typename T>
cudaError_t launchRows(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                       const int32_t *cuSeqlensK, const int32_t *blockTables, const uint8_t *absent,
                       T *out, const PrefillAttentionShape &shape, float scale,
                       cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>(shape.numTokens), static_cast<unsigned>(shape.numHeads));
  rowPrefillKernel<T><<<grid, kAttentionThreads, 0, stream>>>(
      q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape, scale);
  return cudaGetLastError();
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
cudaError_t launchPrefill(const T *q, const T *kCache, const T *vCache, const int32_t *cuSeqlensQ,
                          const int32_t *cuSeqlensK, const int32_t *blockTables,
                          const uint8_t *absent, T *out, const PrefillAttentionShape &shape,
                          float scale, cudaStream_t stream) {
  if (shape.headDim > kMaxCudaHeadDim || shape.numKvHeads <= 0 ||
      shape.numHeads % shape.numKvHeads != 0 || shape.maxQueryLen < 0)
    return cudaErrorInvalidValue;
  if (shape.numTokens == 0)
    return cudaSuccess;
  const bool tiled = shape.maxQueryLen > 0 && aligned16(q) && aligned16(kCache) &&
                     aligned16(vCache) && aligned16(out);
  auto launch = [&](auto kernel) {
    return kernel(q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape, scale,
                  stream);
  };
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (tiled && (shape.headDim == 64 || shape.headDim == 128) && tensorCoresAllowed() &&
        hasBf16TensorCores())
      return launch(detail::launchMmaPrefill);
  }
  if (tiled &&
      (shape.headDim == 32 || shape.headDim == 64 || shape.headDim == 96 || shape.headDim == 128))
    return launch(detail::launchSimtPrefill<T>);
  return launch(launchRows<T>);
}

} // namespace

cudaError_t prefillAttentionCuda(const float *q, const float *kCache, const float *vCache,
                                 const int32_t *cuSeqlensQ, const int32_t *cuSeqlensK,
                                 const int32_t *blockTables, const uint8_t *absent, float *out,
                                 const PrefillAttentionShape &shape, float scale,
                                 cudaStream_t stream) {
  return launchPrefill(q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape,
                       scale, stream);
}

cudaError_t prefillAttentionCuda(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                                 const __nv_bfloat16 *vCache, const int32_t *cuSeqlensQ,
                                 const int32_t *cuSeqlensK, const int32_t *blockTables,
                                 const uint8_t *absent, __nv_bfloat16 *out,
                                 const PrefillAttentionShape &shape, float scale,
                                 cudaStream_t stream) {
  return launchPrefill(q, kCache, vCache, cuSeqlensQ, cuSeqlensK, blockTables, absent, out, shape,
                       scale, stream);
}

} // namespace nnsc::kernels

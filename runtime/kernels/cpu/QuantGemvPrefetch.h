//===- QuantGemvPrefetch.h - How far ahead the quantized GEMV prefetches -*- C++ -*-===//
//
// Private to runtime/kernels/cpu: the software prefetch of the quantized GEMV kernels (the
// 32-weight formats' in QuantGemvKernel.h, the K-quants' in QuantGemvKQuantKernel.h, the
// `vdpbf16ps` ones), which read groups of a few short weight rows that the hardware's stream
// prefetchers train on too late. Internal linkage, as QuantGemvKernel.h explains.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVPREFETCH_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVPREFETCH_H

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

/// How many groups of RB rows ahead of the one being read prefetchGroupAhead fetches, at
/// least. One group (1.4 KB of a 576-column Q4_1 matrix at RB = 4) is too close on a Zen 5:
/// the fp32 kernel still waited on its quant loads. Three: a pass over the whole model at one
/// fp32 row went from 2.64-2.77 to 2.13-2.18 ms (bf16 2.11-2.16 to 2.00-2.03), fp32 batch-1
/// decode from 287-306 to 328-348 tok/s; four was no faster in fp32 and slower in bf16
/// (docs/Engine.md).
constexpr int64_t PrefetchGroupsAhead = 3;

/// How many bytes ahead the kernels that widen each weight (QuantGemvKernel.h,
/// QuantGemvKQuantKernel.h) prefetch, at least: three groups of a 576-column Q4_1 matrix are
/// 4.3 KB. 8 KB, on a Zen 5 whose probe read 82 GB/s: the whole model at one fp32 row 2.17-2.21
/// -> 1.97-1.98 ms (median pass 2.24-2.27 -> 2.08-2.09), fp32 batch-1 decode 385.9 -> 419.1
/// tok/s (medians of eight alternated runs); 16 KB no faster than three groups, 32 KB slower
/// (2.38-2.41 ms). The `vdpbf16ps` kernel keeps three groups: 8 KB made bf16 decode 1.7%
/// slower, 16 KB its layer products 62-66 -> 67-93 us (docs/Engine.md).
constexpr int64_t PrefetchBytesAhead = int64_t(8) * 1024;

/// The groups of RB rows of `rowBytes` bytes that cover at least `minBytes` (and at least
/// PrefetchGroupsAhead).
template <int RB> inline int64_t prefetchGroups(int64_t rowBytes, int64_t minBytes) {
  return std::max(PrefetchGroupsAhead, (minBytes + RB * rowBytes - 1) / (RB * rowBytes));
}

/// Prefetches the blocks of the group of RB rows `groups` groups after this one while this
/// group's block k is read. A row is short (360 bytes for 576 columns in Q4_1), so the
/// hardware's stream prefetchers, seeing RB interleaved streams a few lines long each, train
/// too late: the loads of the quants stalled. That group's RB * rowBytes contiguous bytes are
/// spread evenly over this group's `blocks` iterations. Prefetches past the end of the matrix
/// are harmless (they do not fault), hence the integer arithmetic.
template <int RB, int64_t Bytes>
inline void prefetchGroupAhead(const uint8_t *w, int64_t rowBytes, int64_t k, int64_t groups) {
  // In integers: the group may lie past the weights' end, where pointer arithmetic is
  // undefined; prefetching such an address is harmless.
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(w) + uintptr_t(groups * RB * rowBytes) +
                          uintptr_t(k * RB * Bytes);
  for (int64_t line = 0; line < RB * Bytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char *>(ahead + line), // NOLINT(performance-no-int-to-ptr)
                 _MM_HINT_T0);
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVPREFETCH_H

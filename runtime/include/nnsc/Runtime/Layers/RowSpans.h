//===- RowSpans.h - Kernels split by rows over the thread pool --*- C++ -*-===//
//
// The one place where a layer's kernels are split by rows over the shared pool's intra-op
// threads, the caller taking part: a row-wise kernel (RMSNorm, SiLU(gate) * up) by activation
// rows, a GEMV (dense or on quantized blocks) by weight rows.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_ROWSPANS_H
#define NNSC_RUNTIME_LAYERS_ROWSPANS_H

#include "nnsc/Runtime/Kernels/ThreadPool.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace nnsc {

/// Below this many elements in all, one thread finishes before a second would wake up.
constexpr int64_t MinParallelRowElements = 32 * 1024;

/// Calls span(begin, end) on disjoint spans covering rows [0, rows) of `rowElements` each: one
/// span per intra-op thread, or one for all where the rows are too few or too small.
template <typename F> void forRowSpans(int64_t rows, int64_t rowElements, const F &span) {
  const int threads =
      rows < 2 || rows * rowElements < MinParallelRowElements ? 1 : at::get_num_threads();
  if (threads <= 1) {
    span(int64_t(0), rows);
    return;
  }
  kernels::ThreadPool::shared(threads).parallel(
      [&](int part, int parts) { span(rows * part / parts, rows * (part + 1) / parts); });
}

/// Below this many weights a product is done before a second thread would wake up.
constexpr int64_t MinParallelWeights = 64 * 1024;

/// Calls kernel(begin, end) on one part of weight rows [0, rows) per intra-op thread, each of
/// whole 4-row blocks (the GEMV kernels' row block, so only the last part has a row tail), or
/// once for all where the product (rows x cols weights) is too small to split.
template <typename F> void forWeightRowParts(int64_t rows, int64_t cols, const F &kernel) {
  const int threads = rows * cols < MinParallelWeights ? 1 : at::get_num_threads();
  if (threads <= 1) {
    kernel(int64_t(0), rows);
    return;
  }
  kernels::ThreadPool::shared(threads).parallel([&](int part, int parts) {
    const int64_t blocks = (rows + 3) / 4;
    kernel(std::min(rows, blocks * part / parts * 4),
           std::min(rows, blocks * (part + 1) / parts * 4));
  });
}

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_ROWSPANS_H

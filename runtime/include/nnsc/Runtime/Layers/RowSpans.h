//===- RowSpans.h - Row-wise kernels split over the thread pool -*- C++ -*-===//
//
// The one place where a layer's row-wise kernel (RMSNorm, SiLU(gate) * up) is split by rows
// over the shared pool's intra-op threads, the caller taking part.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_ROWSPANS_H
#define NNSC_RUNTIME_LAYERS_ROWSPANS_H

#include "nnsc/Runtime/Kernels/ThreadPool.h"

#include <ATen/Parallel.h>

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

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_ROWSPANS_H

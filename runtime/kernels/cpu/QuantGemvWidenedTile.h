//===- QuantGemvWidenedTile.h - The exact form over many activation rows -*- C++ -*-===//
//
// Private to runtime/kernels/cpu, included by QuantGemvAvx2.cpp and QuantGemvAvx512.cpp after
// QuantGemvKernel.h and QuantGemvKQuantKernel.h, whose internal-linkage rules it shares.
//
// The exact form (exactBlock, kQuantBlock) widens every weight in registers once per tile of
// BatchBlock activation rows (4 on AVX2, 8 on AVX-512). Over many rows that widening is most of
// the work: a batch-invariant step runs every product in the exact form at any row count, and
// widening the weights again for every 4 rows cost it a third of the 64-request workload's
// throughput (docs/journal/2026-11-29-batch-invariance.md). Here a tile of weight rows is
// widened once into memory (the same register widening, stored) and every activation row of a
// block runs against it, with each (weight row, activation row) pair's FMAs in exactly the
// order exactBlock and kQuantBlock issue them (exactOrderOffset) and the same reduction: the
// same bits as the exact form, whatever the batch, so a product may take either path. The
// default order takes it too from Isa::WidenedTileMinRows rows, which is what lets the
// quantized row limit of a CPU without oneDNN reach 128 rows (QuantizedLinear.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVWIDENEDTILE_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVWIDENEDTILE_H

#include "QuantGemvKQuantKernel.h"
#include "QuantGemvKernel.h"
#include "QuantWidenKernel.h"

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

/// Bytes of one thread's tile of widened fp32 weights, and of the block of activation rows run
/// against it: both fit the L2 of the machines measured (512 KiB and more per core).
constexpr int64_t WidenedTileBytes = int64_t(128) << 10;

/// The offset within a block of F of the t-th W-lane chunk the exact form accumulates: the
/// 32-weight formats pair chunk p of a block's low half with chunk p of its high half
/// (exactBlock), the nibble K-quants chunk p of sub-block 2g with chunk p of sub-block 2g + 1
/// (kQuantBlock), and the 16-weight K-quants run through the block in order.
template <QuantFormat F, int W> constexpr int64_t exactOrderOffset(int t) {
  if constexpr (!isKQuant(F)) {
    return (t % 2) * 16 + (t / 2) * W;
  } else if constexpr (hasNibbleSubBlocks(F)) {
    constexpr int PerGroup = 2 * (32 / W);
    return 64 * (t / PerGroup) + (t % PerGroup % 2) * 32 + (t % PerGroup / 2) * W;
  } else {
    return int64_t(t) * W;
  }
}

/// `rows` rows of W from row r, widened to their exact fp32 weights row-major into `out`
/// (`cols` apart): widenRows for the 32-weight formats, widenKQuantRow for the K-quants.
template <class Isa, QuantFormat F, typename T>
void widenTile(const QuantGemvArgs<T> &a, int64_t r, int64_t rows, float *out) {
  const uint8_t *w = a.w + r * a.rowBytes;
  if constexpr (!isKQuant(F)) {
    widenRows<Isa, F>(w, a.rowBytes, rows, a.cols, out);
  } else {
    for (int64_t i = 0; i < rows; ++i)
      widenKQuantRow<Isa, F>(w + i * a.rowBytes, a.cols, out + i * a.cols);
  }
}

/// Weight rows [r, r + RB) of the tile `tile` (widened from row `tileRow`) against activation
/// rows [b, b + BB): every pair's FMAs in the exact form's order, reduced and stored as there.
template <class Isa, QuantFormat F, int RB, int BB, typename T>
void widenedBlock(const QuantGemvArgs<T> &a, const float *tile, int64_t tileRow, int64_t r,
                  int64_t b) {
  using V = typename Isa::V;
  constexpr int W = Isa::W;
  constexpr int64_t Weights = quantBlockWeights(F);
  constexpr int Chunks = int(Weights / W);
  V acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = Isa::zero();
  const float *w = tile + (r - tileRow) * a.cols;
  const T *x = a.x + b * a.xStride;
  for (int64_t k = 0; k < a.cols; k += Weights) {
    for (int t = 0; t < Chunks; ++t) {
      const int64_t at = k + exactOrderOffset<F, W>(t);
      V xs[BB];
      for (int j = 0; j < BB; ++j)
        xs[j] = Isa::load(x + j * a.xStride + at);
      for (int i = 0; i < RB; ++i) {
        const V weight = Isa::load(w + i * a.cols + at);
        for (int j = 0; j < BB; ++j)
          acc[i][j] = Isa::fma(weight, xs[j], acc[i][j]);
      }
    }
  }
  storeExactSums<Isa, RB, BB>(a, acc, r, b);
}

/// Output columns [rowBegin, rowEnd) of a product over many activation rows: tiles of weight
/// rows widened once per block of activation rows, every activation row of the block run
/// against each, Isa::WidenedRowBlock weight rows by Isa::WidenedBatchBlock activation rows of
/// accumulators at a time (the rows left over one by one: a pair's bits do not depend on its
/// tile). The activation block (WidenedTileBytes of them) stays in the caches while the weight
/// tiles pass, so a prefill of thousands of rows does not stream every row from memory once per
/// weight tile.
template <class Isa, QuantFormat F, typename T>
void widenedTileRows(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  constexpr int RB = Isa::WidenedRowBlock, BB = Isa::WidenedBatchBlock;
  const int64_t rowFloats = a.cols;
  const int64_t tileRows =
      std::max<int64_t>(RB, WidenedTileBytes / int64_t(sizeof(float)) / rowFloats / RB * RB);
  const int64_t activationBlock =
      std::max<int64_t>(BB, WidenedTileBytes / int64_t(sizeof(T)) / rowFloats / BB * BB);
  thread_local std::vector<float> tile;
  if (tile.size() < size_t(tileRows * rowFloats))
    tile.resize(size_t(tileRows * rowFloats));
  for (int64_t firstActivation = 0; firstActivation < a.batch; firstActivation += activationBlock) {
    const int64_t lastActivation = std::min(a.batch, firstActivation + activationBlock);
    for (int64_t first = rowBegin; first < rowEnd; first += tileRows) {
      const int64_t count = std::min(tileRows, rowEnd - first);
      widenTile<Isa, F>(a, first, count, tile.data());
      auto weightRows = [&](auto activationRows, int64_t b) {
        constexpr int Rows = decltype(activationRows)::value;
        int64_t r = first;
        for (; r + RB <= first + count; r += RB)
          widenedBlock<Isa, F, RB, Rows>(a, tile.data(), first, r, b);
        for (; r < first + count; ++r)
          widenedBlock<Isa, F, 1, Rows>(a, tile.data(), first, r, b);
      };
      int64_t b = firstActivation;
      for (; b + BB <= lastActivation; b += BB)
        weightRows(std::integral_constant<int, BB>(), b);
      for (; b < lastActivation; ++b)
        weightRows(std::integral_constant<int, 1>(), b);
    }
  }
}

/// Whether widenedTileRows computes `a`: a product over Isa::WidenedTileMinRows activation
/// rows or more (exact or not: from 2 rows on, exactBlock's rows are all exact but a last one
/// alone in its tile).
template <class Isa, typename T> bool widenedTileApplies(const QuantGemvArgs<T> &a) {
  return a.batch >= Isa::WidenedTileMinRows;
}

/// Output columns [rowBegin, rowEnd) of any product on `Isa`: the widened tiles where they
/// apply, the K-quant or 32-weight kernels otherwise.
template <class Isa, typename T>
void quantGemvProduct(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  if (widenedTileApplies<Isa>(a))
    onAnyFormat(a.format,
                [&](auto f) { widenedTileRows<Isa, decltype(f)::value>(a, rowBegin, rowEnd); });
  else if (isKQuant(a.format))
    kQuantGemvOn<Isa>(a, rowBegin, rowEnd);
  else
    quantGemvOn<Isa>(a, rowBegin, rowEnd);
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVWIDENEDTILE_H

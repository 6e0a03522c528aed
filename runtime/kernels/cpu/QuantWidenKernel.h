//===- QuantWidenKernel.h - Blocks widened to a GEMM's tile -----*- C++ -*-===//
//
// Private to runtime/kernels/cpu: widenQuantRows' body over a vector ISA, which
// QuantGemvAvx2.cpp and QuantGemvAvx512.cpp instantiate: the GEMV kernels' own register
// widening of a block (weights(), QuantGemvKernel.h) stored to memory, so a tile holds exactly
// the loader's dequantized values. Internal linkage, as QuantGemvKernel.h explains.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTWIDENKERNEL_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTWIDENKERNEL_H

#include "QuantGemvKernel.h"

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

/// `rows` rows of W (split-row layout, `rowBytes` apart) as their exact fp32 weights (weights(),
/// dequantize*()'s values), row-major into `out`: fp32, or bf16 rounded to nearest even as
/// bf16::narrow rounds (Isa::store). A tile of a GEMM on the blocks (widenQuantRows).
template <class Isa, QuantFormat F, typename T>
void widenRows(const uint8_t *w, int64_t rowBytes, int64_t rows, int64_t cols, T *out) {
  using V = typename Isa::V;
  using Row = SplitRow<F>;
  constexpr int W = Isa::W, Pairs = 16 / W;
  const int64_t blocks = cols / BlockWeights;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *row = w + r * rowBytes;
    const uint8_t *qs = Row::quants(row, blocks);
    T *o = out + r * cols;
    for (int64_t k = 0; k < blocks; ++k) {
      const float scale = half(Row::scales(row) + 2 * k);
      const V d = Isa::set1(scale);
      const V addend = Isa::set1(blockAddend<F>(
          scale, quantHasMinimum(F) ? half(Row::minimums(row, blocks) + 2 * k) : 0.0f));
      for (int p = 0; p < Pairs; ++p) {
        V lo, hi;
        weights<Isa, F>(qs + k * Row::QuantBytes, p, d, addend, lo, hi);
        Isa::store(o + k * BlockWeights + p * W, lo);
        Isa::store(o + k * BlockWeights + 16 + p * W, hi);
      }
    }
  }
}

template <class Isa, typename T>
void widenQuantRowsOn(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                      int64_t cols, T *out) {
  onBlockFormat(format,
                [&](auto f) { widenRows<Isa, decltype(f)::value>(w, rowBytes, rows, cols, out); });
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTWIDENKERNEL_H

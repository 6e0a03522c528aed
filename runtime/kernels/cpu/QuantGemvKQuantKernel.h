//===- QuantGemvKQuantKernel.h - The K-quants' GEMV, over a vector ISA -*- C++ -*-===//
//
// Private to runtime/kernels/cpu, included by QuantGemvAvx2.cpp and QuantGemvAvx512.cpp after
// QuantGemvKernel.h, whose internal-linkage rules and helpers it shares. Q4_K and Q6_K rows
// are read as the file stores them: 256-weight super-blocks, each unpacked once per product
// (Dequantize.h's unpackQ4_K / unpackQ6_K: the quants as int8, the sub-block scales and
// minimums as exact fp32) into a small buffer that stays in L1, then widened W quants at a time
// to exactly the weights dequantizeQ4_K / dequantizeQ6_K produce (scale * q, minus the
// minimum for Q4_K: two roundings, -ffp-contract=off) and multiplied with every activation row
// of the tile. One form for every batch size: the result is the fp32 product with the
// dequantized weights up to summation order.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKQUANTKERNEL_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKQUANTKERNEL_H

#include "QuantGemvKernel.h"
#include "nnsc/Runtime/Kernels/Dequantize.h"

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

/// One super-block of a row, unpacked: the quants, and per group of weights sharing a scale
/// (32 for Q4_K, 16 for Q6_K) the scale and (Q4_K) the minimum.
template <QuantFormat F> struct UnpackedSuperBlock {
  static constexpr int Groups = F == QuantFormat::Q4_K ? 8 : 16;
  static constexpr int GroupWeights = int(kKQuantBlock) / Groups;
  alignas(64) int8_t q[kKQuantBlock];
  float scales[Groups];
  float minimums[F == QuantFormat::Q4_K ? Groups : 1];

  void unpack(const uint8_t *block) {
    if constexpr (F == QuantFormat::Q4_K)
      unpackQ4_K(block, q, scales, minimums);
    else
      unpackQ6_K(block, q, scales);
  }
};

/// Rows [r, r + RB) of W against activation rows [b, b + BB).
template <class Isa, QuantFormat F, int RB, int BB, typename T>
void kQuantBlock(const QuantGemvArgs<T> &a, int64_t r, int64_t b) {
  using V = typename Isa::V;
  using Unpacked = UnpackedSuperBlock<F>;
  constexpr int W = Isa::W;
  constexpr int64_t Bytes = quantBlockBytes(F);
  V acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = Isa::zero();
  const uint8_t *w = a.w + r * a.rowBytes;
  const T *x = a.x + b * a.xStride;
  Unpacked rows[RB];
  for (int64_t k = 0; k < a.cols / kKQuantBlock; ++k) {
    if (b == 0) // later activation tiles of these rows find the next group prefetched
      prefetchNextGroup<RB, Bytes>(w, a.rowBytes, k);
    for (int i = 0; i < RB; ++i)
      rows[i].unpack(w + i * a.rowBytes + k * Bytes);
    for (int g = 0; g < Unpacked::Groups; ++g) {
      V scale[RB], minimum[RB];
      for (int i = 0; i < RB; ++i) {
        scale[i] = Isa::set1(rows[i].scales[g]);
        if constexpr (F == QuantFormat::Q4_K)
          minimum[i] = Isa::set1(rows[i].minimums[g]);
      }
      for (int p = 0; p < Unpacked::GroupWeights; p += W) {
        const int64_t col = k * kKQuantBlock + g * Unpacked::GroupWeights + p;
        V xs[BB];
        for (int j = 0; j < BB; ++j)
          xs[j] = Isa::load(x + j * a.xStride + col);
        for (int i = 0; i < RB; ++i) {
          V weight = Isa::mul(scale[i], Isa::q8(rows[i].q + g * Unpacked::GroupWeights + p));
          if constexpr (F == QuantFormat::Q4_K)
            weight = Isa::sub(weight, minimum[i]);
          for (int j = 0; j < BB; ++j)
            acc[i][j] = Isa::fma(weight, xs[j], acc[i][j]);
        }
      }
    }
  }
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    for (int j = 0; j < BB; ++j) {
      T *out = a.y + (b + j) * a.yStride + r + i;
      const float v = Isa::reduce(acc[i][j]) + bias;
      store(out, a.accumulate ? widen(*out) + v : v);
    }
  }
}

/// Weight rows [r, r + RB) against every activation row, BatchBlock rows at a time.
template <class Isa, QuantFormat F, int RB, typename T>
void kQuantRowBlock(const QuantGemvArgs<T> &a, int64_t r) {
  constexpr int BB = Isa::BatchBlock;
  int64_t b = 0;
  for (; b + BB <= a.batch; b += BB)
    kQuantBlock<Isa, F, RB, BB>(a, r, b);
  switch (a.batch - b) {
  case 3:
    kQuantBlock<Isa, F, RB, 3>(a, r, b);
    break;
  case 2:
    kQuantBlock<Isa, F, RB, 2>(a, r, b);
    break;
  case 1:
    kQuantBlock<Isa, F, RB, 1>(a, r, b);
    break;
  default:
    break;
  }
}

template <class Isa, QuantFormat F, int RB, typename T>
void kQuantRows(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  int64_t r = rowBegin;
  for (; r + RB <= rowEnd; r += RB)
    kQuantRowBlock<Isa, F, RB>(a, r);
  for (; r < rowEnd; ++r)
    kQuantRowBlock<Isa, F, 1>(a, r);
}

/// Output columns [rowBegin, rowEnd) of a Q4_K or Q6_K product. A single activation row leaves
/// registers for more weight rows.
template <class Isa, typename T>
void kQuantGemvOn(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  auto run = [&](auto format) {
    constexpr QuantFormat F = decltype(format)::value;
    if (a.batch == 1)
      kQuantRows<Isa, F, Isa::SingleRowBlock>(a, rowBegin, rowEnd);
    else
      kQuantRows<Isa, F, Isa::RowBlock>(a, rowBegin, rowEnd);
  };
  if (a.format == QuantFormat::Q4_K)
    run(std::integral_constant<QuantFormat, QuantFormat::Q4_K>());
  else
    run(std::integral_constant<QuantFormat, QuantFormat::Q6_K>());
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKQUANTKERNEL_H

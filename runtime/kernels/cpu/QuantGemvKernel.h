//===- QuantGemvKernel.h - The quantized GEMV, over a vector ISA -*- C++ -*-===//
//
// Private to runtime/kernels/cpu: the one kernel body that QuantGemvAvx2.cpp and
// QuantGemvAvx512.cpp instantiate with their vector type `Isa` (lanes, loads, FMA, the widening
// of a block's quants). Everything here has internal linkage on purpose: each including file
// is compiled for a different instruction set, and an inline function with external linkage
// could be merged by the linker into the AVX-512 copy and then run on a CPU without AVX-512.
// Those files are compiled with -ffp-contract=off so that no sum is fused where the
// dequantizers round it; the FMAs are explicit (a weight's fma(d, q, addend) rounds as the
// dequantizer's d * q + m does, since d * q is exact: weights()).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKERNEL_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKERNEL_H

#include "QuantGemvPrefetch.h"

#include "nnsc/Runtime/Kernels/Dequantize.h"
#include "nnsc/Runtime/Kernels/QuantGemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see above

constexpr int64_t BlockWeights = 32;

/// Where a row's parts lie in the split-row layout (splitQuantRows): the fp16 scales of its
/// `blocks` blocks, then (Q4_1, Q5_1) their minimums, then their quants (for Q5_0/Q5_1 each
/// block's 4 bytes of fifth bits, then its 16 bytes of low nibbles).
template <QuantFormat F> struct SplitRow {
  static constexpr int64_t QuantBytes = quantBlockQuantBytes(F);
  static constexpr int64_t ScaleBytes = quantBlockBytes(F) - QuantBytes; // scale (+ minimum)
  static const uint8_t *scales(const uint8_t *row) { return row; }
  static const uint8_t *minimums(const uint8_t *row, int64_t blocks) { return row + 2 * blocks; }
  static const uint8_t *quants(const uint8_t *row, int64_t blocks) {
    return row + ScaleBytes * blocks;
  }
};

/// Whether Avx512::widenHalvesInRow may read 32 bytes from any block's scale or minimum of a
/// split row of `cols` columns: with two blocks or more the row's quants follow them.
constexpr bool scalesLoadWhole(int64_t cols) { return cols >= 2 * BlockWeights; }

/// An fp16 scale at `p` (unaligned), widened exactly (F16C).
inline float half(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return _cvtsh_ss(h);
}

/// The sum of an AVX2 vector's 8 lanes (the AVX2 Isa's reduce; the K-quant kernel's minimum
/// terms on either instruction set).
inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float widen(float v) { return v; }
inline float widen(uint16_t v) {
  const uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline void store(float *p, float v) { *p = v; }
inline void store(uint16_t *p, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if (std::isnan(v))
    *p = uint16_t((bits >> 16) | 0x40); // keep the sign, force a quiet NaN
  else
    *p = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

/// Whether F's quants are 5 bits: 4 in nibbles as in the 4-bit formats, the fifth in a word.
constexpr bool isQ5(QuantFormat f) { return f == QuantFormat::Q5_0 || f == QuantFormat::Q5_1; }

/// Whether a block's dot product has a second term m * sum(x) in the factored form (a minimum,
/// or Q4_0's and Q5_0's offset); Q8_0's and IQ4_NL's quants are the signed values themselves.
constexpr bool hasMinimumTerm(QuantFormat f) {
  return f != QuantFormat::Q8_0 && f != QuantFormat::IQ4_NL;
}

/// The quants [p W, p W + W) and [16 + p W, 16 + p W + W) of the block whose quants are at
/// `qs` (W lanes), as exact fp32 integers, unsigned for the 4- and 5-bit formats: in those
/// byte i holds quant i (low nibble) and quant 16 + i (high nibble), so one widening of W bytes
/// serves both; Q5_0/Q5_1 add 16 where bit j of the 32-bit word before the nibbles is set
/// (Isa::q5); IQ4_NL's nibbles are indices into kIQ4NLValues, looked up as floats (Isa::iq4nl).
template <class Isa, QuantFormat F>
inline void quants(const uint8_t *qs, std::ptrdiff_t p, typename Isa::V &lo, typename Isa::V &hi) {
  constexpr int W = Isa::W;
  if constexpr (F == QuantFormat::IQ4_NL) {
    Isa::iq4nl(qs + p * W, lo, hi);
  } else if constexpr (F == QuantFormat::Q8_0) {
    const auto *q = reinterpret_cast<const int8_t *>(qs);
    lo = Isa::q8(q + p * W);
    hi = Isa::q8(q + 16 + p * W);
  } else if constexpr (isQ5(F)) {
    Isa::q5(qs, p, lo, hi);
  } else {
    Isa::q4(qs + p * W, lo, hi);
  }
}

/// The offset the symmetric formats subtract from their unsigned quants: 8 (Q4_0), 16 (Q5_0).
template <QuantFormat F> constexpr float quantOffset() {
  return F == QuantFormat::Q4_0 ? 8.0f : F == QuantFormat::Q5_0 ? 16.0f : 0.0f;
}

/// What a block adds to d * q to give its weights: its minimum m (Q4_1, Q5_1), -8 d (Q4_0),
/// -16 d (Q5_0), nothing (Q8_0, IQ4_NL); exact.
template <QuantFormat F> inline float blockAddend(float d, float minimum) {
  if constexpr (quantHasMinimum(F))
    return minimum;
  else
    return -quantOffset<F>() * d;
}

/// Weights [p W, p W + W) and [16 + p W, 16 + p W + W) of the block whose quants are at `qs`
/// (W lanes), as the exact fp32 weights dequantize*() computes: d * q (Q8_0; IQ4_NL with q its
/// codebook value), d * (q - offset) (Q4_0, Q5_0), d * q + m rounded twice (Q4_1, Q5_1). The
/// last two as one FMA with `addend` (blockAddend): an fp16 d times a quant of at most 5 bits
/// has at most 16 significant bits, so d * q is exact, the FMA's one rounding is the addition's,
/// and d * (q - offset) = d * q - offset d is exact too.
template <class Isa, QuantFormat F>
inline void weights(const uint8_t *qs, std::ptrdiff_t p, typename Isa::V d, typename Isa::V addend,
                    typename Isa::V &lo, typename Isa::V &hi) {
  typename Isa::V qlo, qhi;
  quants<Isa, F>(qs, p, qlo, qhi);
  if constexpr (!hasMinimumTerm(F)) {
    lo = Isa::mul(d, qlo);
    hi = Isa::mul(d, qhi);
  } else {
    lo = Isa::fma(d, qlo, addend);
    hi = Isa::fma(d, qhi, addend);
  }
}

/// The n <= 16 fp16 values at `p` of a split row of `blocks` blocks widened into out[0, n),
/// zeros up to 16: by Isa::widenHalves where the row lets it read 32 bytes (scalesLoadWhole),
/// one at a time otherwise.
template <class Isa>
inline void widenRowHalves(const uint8_t *p, int n, int64_t blocks, const uint8_t *rowEnd,
                           float *out) {
  if (scalesLoadWhole(blocks * BlockWeights)) {
    Isa::widenHalves(p, n, rowEnd, out);
    return;
  }
  for (std::ptrdiff_t t = 0; t < 16; ++t)
    out[t] = t < n ? half(p + 2 * t) : 0.0f;
}

/// The scales of blocks [first, first + n) of a split row (n <= 16) widened into scales[0, n)
/// and, where the format has one, their addends (blockAddend) into addends[0, n); zeros up to
/// 16. `rowEnd` is the row's end.
template <class Isa, QuantFormat F>
inline void widenBlockScales(const uint8_t *row, int64_t blocks, int64_t first, int n,
                             const uint8_t *rowEnd, float *scales, float *addends) {
  using Row = SplitRow<F>;
  widenRowHalves<Isa>(Row::scales(row) + 2 * first, n, blocks, rowEnd, scales);
  if constexpr (quantHasMinimum(F)) {
    widenRowHalves<Isa>(Row::minimums(row, blocks) + 2 * first, n, blocks, rowEnd, addends);
  } else if constexpr (hasMinimumTerm(F)) {
    for (int t = 0; t < 16; ++t)
      addends[t] = blockAddend<F>(scales[t], 0.0f);
  }
}

/// Writes the RB x BB sums of `acc` (weight rows [r, r + RB), activation rows [b, b + BB)):
/// each reduced, plus its bias, stored or added to y. The exact form's one epilogue, which the
/// widened tiles (QuantGemvWidenedTile.h) share so that their bits are the same.
template <class Isa, int RB, int BB, typename T>
inline void storeExactSums(const QuantGemvArgs<T> &a, const typename Isa::V (&acc)[RB][BB],
                           int64_t r, int64_t b) {
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    for (int j = 0; j < BB; ++j) {
      T *out = a.y + (b + j) * a.yStride + r + i;
      const float v = Isa::reduce(acc[i][j]) + bias;
      store(out, a.accumulate ? widen(*out) + v : v);
    }
  }
}

/// Blocks whose scales the kernels widen together (a chunk): 32 covers a row of up to 1024
/// columns (SmolLM2's 576: 18 blocks) in one chunk.
constexpr int ChunkBlocks = 32;

/// Rows [r, r + RB) of W against activation rows [b, b + BB): each weight is widened to exactly
/// its dequantized fp32 value once, for all BB activation rows. The scales (and addends) of a
/// chunk of ChunkBlocks blocks are widened together into small arrays first, as the factored
/// kernel widens them (one conversion per block and row each cost a single activation row a
/// third more instructions than its weights' own).
template <class Isa, QuantFormat F, int RB, int BB, typename T>
void exactBlock(const QuantGemvArgs<T> &a, int64_t r, int64_t b) {
  using V = typename Isa::V;
  constexpr int W = Isa::W, Pairs = 16 / W;
  constexpr int64_t Bytes = quantBlockBytes(F);
  V acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = Isa::zero();
  using Row = SplitRow<F>;
  const uint8_t *w = a.w + r * a.rowBytes;
  const T *x = a.x + b * a.xStride;
  const int64_t blocks = a.cols / BlockWeights;
  const uint8_t *qs = Row::quants(w, blocks);
  alignas(64) float scales[RB][ChunkBlocks], addends[RB][ChunkBlocks];
  const int64_t ahead = prefetchGroups<RB>(a.rowBytes, PrefetchBytesAhead);
  for (int64_t chunk = 0; chunk < blocks; chunk += ChunkBlocks) {
    const int n = int(std::min<int64_t>(ChunkBlocks, blocks - chunk));
    for (int i = 0; i < RB; ++i) {
      const uint8_t *row = w + i * a.rowBytes;
      for (int h = 0; h * 16 < n; ++h)
        widenBlockScales<Isa, F>(row, blocks, chunk + int64_t(h) * 16, std::min(16, n - h * 16),
                                 row + blocks * Bytes, scales[i] + h * 16, addends[i] + h * 16);
    }
    for (int kk = 0; kk < n; ++kk) {
      const int64_t k = chunk + kk;
      if (b == 0) // later activation tiles of these rows find their blocks prefetched
        prefetchGroupAhead<RB, Bytes>(w, a.rowBytes, k, ahead);
      for (int p = 0; p < Pairs; ++p) {
        V xlo[BB], xhi[BB];
        for (int j = 0; j < BB; ++j) {
          const T *xk = x + j * a.xStride + k * BlockWeights + p * W;
          xlo[j] = Isa::load(xk);
          xhi[j] = Isa::load(xk + 16);
        }
        for (int i = 0; i < RB; ++i) {
          V lo, hi;
          weights<Isa, F>(qs + i * a.rowBytes + k * Row::QuantBytes, p, Isa::set1(scales[i][kk]),
                          hasMinimumTerm(F) ? Isa::set1(addends[i][kk]) : Isa::zero(), lo, hi);
          for (int j = 0; j < BB; ++j) {
            acc[i][j] = Isa::fma(lo, xlo[j], acc[i][j]);
            acc[i][j] = Isa::fma(hi, xhi[j], acc[i][j]);
          }
        }
      }
    }
  }
  storeExactSums<Isa, RB, BB>(a, acc, r, b);
}

/// out[i] = the sum of acc[i]'s lanes, four rows at once where there are four.
template <class Isa, int RB>
inline void reduceRows(const typename Isa::V (&acc)[RB], float (&out)[RB]) {
  if constexpr (RB == 4) {
    Isa::reduce4(acc, out);
  } else {
    for (int i = 0; i < RB; ++i)
      out[i] = Isa::reduce(acc[i]);
  }
}

/// Rows [r, r + RB) of W against activation row b. A block's weights are d * q + m (m = -8 d
/// for Q4_0, -16 d for Q5_0, 0 for Q8_0 and IQ4_NL), so its dot product with x is d * sum(q x) + m
/// * sum(x): the quants are multiplied as exact integers and the scales applied once per block.
/// Fewer instructions per weight than exactBlock: used for a single activation row. The scales (and
/// minimums) of a chunk of ChunkBlocks blocks of a row are widened together into a small array,
/// from which each block's FMA broadcasts its own scale; the minimums' terms m * sum(x) of the
/// chunk are one vector FMA per 16 blocks and row with `minSums` (blockMinSums). At 576 columns
/// the work outside the blocks' loop was a fifth of the kernel's time: chunks of 32 blocks (one
/// per row here, two of 16 before), the four rows' sums reduced together (reduceRows) and full
/// loads of the scales (Avx512::widenHalves) took Q4_1 at one fp32 row on a Zen 5 from 43-46
/// to 50-51 Gweights/s (nnsc-bench-quant-formats, one thread, 3072 x 576). It (with block and
/// rowBlock) is inlined into gemvRows' loop over row groups, which then sets up the prefetch
/// distance and the row pointers once per matrix instead of once per 4 rows: another 2-3%.
template <class Isa, QuantFormat F, int RB, typename T>
[[gnu::always_inline]] inline void factoredBlock(const QuantGemvArgs<T> &a, int64_t r, int64_t b,
                                                 const float *minSums) {
  using V = typename Isa::V;
  using Row = SplitRow<F>;
  constexpr int W = Isa::W, Pairs = 16 / W;
  constexpr int64_t Bytes = quantBlockBytes(F);
  constexpr bool HasMin = hasMinimumTerm(F);
  // One accumulator per row, in a register through every chunk. Each chunk adds its minimum
  // terms (lanes past the last block are 0 in both factors), which the final reduction sums
  // with the rest.
  V acc[RB];
  for (int i = 0; i < RB; ++i)
    acc[i] = Isa::zero();
  const uint8_t *w = a.w + r * a.rowBytes;
  const T *x = a.x + b * a.xStride;
  const int64_t blocks = a.cols / BlockWeights;
  const uint8_t *qs = Row::quants(w, blocks);
  alignas(64) float scales[RB][ChunkBlocks], minimums[RB][ChunkBlocks];
  const int64_t ahead = prefetchGroups<RB>(a.rowBytes, PrefetchBytesAhead);
  for (int64_t chunk = 0; chunk < blocks; chunk += ChunkBlocks) {
    const int n = int(std::min<int64_t>(ChunkBlocks, blocks - chunk));
    for (int i = 0; i < RB; ++i) {
      const uint8_t *row = w + i * a.rowBytes;
      const uint8_t *rowEnd = row + blocks * Bytes;
      for (int h = 0; h * 16 < n; ++h) {
        const int count = std::min(16, n - h * 16);
        const int64_t first = chunk + int64_t(h) * 16; // the first block widened
        Isa::widenHalves(Row::scales(row) + 2 * first, count, rowEnd, scales[i] + h * 16);
        if constexpr (quantHasMinimum(F))
          Isa::widenHalves(Row::minimums(row, blocks) + 2 * first, count, rowEnd,
                           minimums[i] + h * 16);
      }
    }
    if constexpr (HasMin)
      for (int i = 0; i < RB; ++i)
        for (int c = 0; c < n; c += W)
          acc[i] = Isa::fma(Isa::load((quantHasMinimum(F) ? minimums : scales)[i] + c),
                            Isa::load(minSums + chunk + c), acc[i]);
    for (int kk = 0; kk < n; ++kk) {
      const int64_t k = chunk + kk;
      if (b == 0)
        prefetchGroupAhead<RB, Bytes>(w, a.rowBytes, k, ahead);
      V dot[RB];
      for (int p = 0; p < Pairs; ++p) {
        const T *xk = x + k * BlockWeights + p * W;
        const V xlo = Isa::load(xk), xhi = Isa::load(xk + 16);
        for (int i = 0; i < RB; ++i) {
          V lo, hi;
          quants<Isa, F>(qs + i * a.rowBytes + k * Row::QuantBytes, p, lo, hi);
          dot[i] = p ? Isa::fma(lo, xlo, dot[i]) : Isa::mul(lo, xlo);
          dot[i] = Isa::fma(hi, xhi, dot[i]);
        }
      }
      for (int i = 0; i < RB; ++i)
        acc[i] = Isa::fma(Isa::set1(scales[i][kk]), dot[i], acc[i]);
    }
  }
  float sums[RB];
  reduceRows<Isa, RB>(acc, sums);
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    T *out = a.y + b * a.yStride + r + i;
    const float v = sums[i] + bias;
    store(out, a.accumulate ? widen(*out) + v : v);
  }
}

/// A single activation row goes to the factored kernel where Isa::widenHalves may read its
/// scales 32 bytes at a time (scalesLoadWhole).
template <class Isa, QuantFormat F, int RB, int BB, typename T>
[[gnu::always_inline]] inline void block(const QuantGemvArgs<T> &a, int64_t r, int64_t b,
                                         const float *minSums) {
  if constexpr (BB == 1)
    if (scalesLoadWhole(a.cols) && !a.exact) {
      factoredBlock<Isa, F, RB>(a, r, b, minSums);
      return;
    }
  exactBlock<Isa, F, RB, BB>(a, r, b);
}

/// For the factored kernel on activation row b: per block k, sum(x[32 k, 32 k + 32)) times the
/// factor of the block's minimum (1 for Q4_1's and Q5_1's m, -8 for Q4_0's m = -8 d, -16 for
/// Q5_0's; all zeros without a minimum term), then zeros up to a multiple of 16 blocks. Per
/// thread, reused.
template <class Isa, QuantFormat F, typename T>
const float *blockMinSums(const QuantGemvArgs<T> &a, int64_t b) {
  constexpr int W = Isa::W;
  thread_local std::vector<float> sums;
  const int64_t blocks = a.cols / BlockWeights;
  sums.assign(size_t((blocks + 15) / 16 * 16), 0.0f);
  if constexpr (!hasMinimumTerm(F))
    return sums.data();
  const T *x = a.x + b * a.xStride;
  for (int64_t k = 0; k < blocks; ++k) {
    typename Isa::V v = Isa::zero();
    for (int c = 0; c < BlockWeights; c += W)
      v = Isa::add(v, Isa::load(x + k * BlockWeights + c));
    sums[size_t(k)] = (quantHasMinimum(F) ? 1.0f : -quantOffset<F>()) * Isa::reduce(v);
  }
  return sums.data();
}

/// Calls tile(std::integral_constant<int, n>(), b) for the activation rows [b, b + n) of a
/// batch: BB rows at a time (BB = Isa::BatchBlock, 4 or 8), then a tile of 4 if BB is 8 and 4
/// or more are left, then the 1-3 rows left.
template <int BB, typename F> void forBatchTiles(int64_t batch, const F &tile) {
  static_assert(BB == 4 || BB == 8, "the rest is cut into tiles of 4, 3, 2 or 1 rows");
  int64_t b = 0;
  for (; b + BB <= batch; b += BB)
    tile(std::integral_constant<int, BB>(), b);
  if constexpr (BB == 8)
    if (b + 4 <= batch) {
      tile(std::integral_constant<int, 4>(), b);
      b += 4;
    }
  switch (batch - b) {
  case 3:
    tile(std::integral_constant<int, 3>(), b);
    break;
  case 2:
    tile(std::integral_constant<int, 2>(), b);
    break;
  case 1:
    tile(std::integral_constant<int, 1>(), b);
    break;
  default:
    break;
  }
}

/// Whether forBatchTiles<BB> leaves the batch's last row alone in a tile of one (the factored
/// kernels' case).
template <int BB> constexpr bool lastTileIsOneRow(int64_t batch) { return batch % BB % 4 == 1; }

template <class Isa, QuantFormat F, int RB, typename T>
[[gnu::always_inline]] inline void rowBlock(const QuantGemvArgs<T> &a, int64_t r,
                                            const float *minSums) {
  forBatchTiles<Isa::BatchBlock>(a.batch, [&](auto rows, int64_t b) {
    block<Isa, F, RB, decltype(rows)::value>(a, r, b, minSums);
  });
}

template <class Isa, QuantFormat F, int RB, typename T>
void gemvRows(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  // The last activation row goes to the factored kernel when the batch leaves it alone.
  const float *minSums = lastTileIsOneRow<Isa::BatchBlock>(a.batch) && !a.exact
                             ? blockMinSums<Isa, F>(a, a.batch - 1)
                             : nullptr;
  int64_t r = rowBegin;
  for (; r + RB <= rowEnd; r += RB)
    rowBlock<Isa, F, RB>(a, r, minSums);
  for (; r < rowEnd; ++r)
    rowBlock<Isa, F, 1>(a, r, minSums);
}

/// A single activation row leaves registers for more weight rows.
template <class Isa, QuantFormat F, typename T>
void gemvRows(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  if (a.batch == 1)
    gemvRows<Isa, F, Isa::SingleRowBlock>(a, rowBegin, rowEnd);
  else
    gemvRows<Isa, F, Isa::RowBlock>(a, rowBegin, rowEnd);
}

/// Calls f(std::integral_constant<QuantFormat, F>()) for `format`, any of the twelve formats.
template <typename Fn> void onAnyFormat(QuantFormat format, const Fn &f) {
  switch (format) {
  case QuantFormat::Q4_0:
    f(std::integral_constant<QuantFormat, QuantFormat::Q4_0>());
    break;
  case QuantFormat::Q4_1:
    f(std::integral_constant<QuantFormat, QuantFormat::Q4_1>());
    break;
  case QuantFormat::Q5_0:
    f(std::integral_constant<QuantFormat, QuantFormat::Q5_0>());
    break;
  case QuantFormat::Q5_1:
    f(std::integral_constant<QuantFormat, QuantFormat::Q5_1>());
    break;
  case QuantFormat::Q8_0:
    f(std::integral_constant<QuantFormat, QuantFormat::Q8_0>());
    break;
  case QuantFormat::IQ4_NL:
    f(std::integral_constant<QuantFormat, QuantFormat::IQ4_NL>());
    break;
  case QuantFormat::Q2_K:
    f(std::integral_constant<QuantFormat, QuantFormat::Q2_K>());
    break;
  case QuantFormat::Q3_K:
    f(std::integral_constant<QuantFormat, QuantFormat::Q3_K>());
    break;
  case QuantFormat::Q4_K:
    f(std::integral_constant<QuantFormat, QuantFormat::Q4_K>());
    break;
  case QuantFormat::Q5_K:
    f(std::integral_constant<QuantFormat, QuantFormat::Q5_K>());
    break;
  case QuantFormat::Q6_K:
    f(std::integral_constant<QuantFormat, QuantFormat::Q6_K>());
    break;
  case QuantFormat::IQ4_XS:
    f(std::integral_constant<QuantFormat, QuantFormat::IQ4_XS>());
    break;
  }
}

/// onAnyFormat for the 32-weight formats; nothing for the K-quants (kQuantGemvOn,
/// QuantGemvKQuantKernel.h; not widened, QuantWidenKernel.h).
template <typename Fn> void onBlockFormat(QuantFormat format, const Fn &f) {
  onAnyFormat(format, [&](auto c) {
    if constexpr (!isKQuant(decltype(c)::value))
      f(c);
  });
}

template <class Isa, typename T>
void quantGemvOn(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  onBlockFormat(a.format, [&](auto f) { gemvRows<Isa, decltype(f)::value>(a, rowBegin, rowEnd); });
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKERNEL_H

//===- QuantGemvKQuantKernel.h - The K-quants' GEMV, over a vector ISA -*- C++ -*-===//
//
// Private to runtime/kernels/cpu, included by QuantGemvAvx2.cpp and QuantGemvAvx512.cpp after
// QuantGemvKernel.h, whose internal-linkage rules and helpers it shares (and by
// QuantGemvAvx512Bf16KQuant.cpp for SuperBlockScales). K-quant rows are read
// as the file stores them, 256-weight super-blocks. Q4_K's quants are widened in registers W at
// a time (Isa::q4: a byte's low nibble is a weight of the even sub-block of its 64, the high
// nibble the same weight of the odd one), Q5_K's the same way with their fifth bits or'ed in
// (Isa::q5K), and their 6-bit scales and minimums decoded once per super-block and row
// (q4KScalesMins); IQ4_XS's nibbles are looked up in the codebook in registers as IQ4_NL's are
// (Isa::iq4nl), its 6-bit scales decoded likewise. The formats of 16 sub-blocks of 16 (Q2_K,
// Q3_K, Q6_K) are unpacked into a small buffer (unpackQ2_K, unpackQ3_K, Isa::unpackQ6K) and
// widened from there. Each weight is widened to exactly its dequantized value (scale * q, minus the
// minimum for Q2_K, Q4_K and Q5_K, two roundings under -ffp-contract=off) once for every
// activation row of the tile, except for Q4_K, Q5_K and IQ4_XS against a single row, which take
// the factored form scale * sum(q x) - minimum * sum(x) per 32-weight sub-block as the 32-weight
// formats do (QuantGemv.h).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKQUANTKERNEL_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKQUANTKERNEL_H

#include "QuantGemvKernel.h"
#include "nnsc/Runtime/Kernels/Dequantize.h"

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

/// Whether F's super-blocks hold 8 sub-blocks of 32 weights with 6-bit scales and their
/// quants' low 4 bits in nibbles, widened in registers: Q4_K, Q5_K with a fifth bit plane (both
/// with 6-bit minimums), IQ4_XS (codebook indices, no minimums).
constexpr bool hasNibbleSubBlocks(QuantFormat f) {
  return f == QuantFormat::Q4_K || f == QuantFormat::Q5_K || f == QuantFormat::IQ4_XS;
}

/// Whether F's super-block minimums are subtracted: Q2_K, Q4_K, Q5_K.
constexpr bool hasSubBlockMinimums(QuantFormat f) {
  return f == QuantFormat::Q4_K || f == QuantFormat::Q5_K || f == QuantFormat::Q2_K;
}

/// q4KScalesMins in a vector register, from the 12 bytes at `packed` (the 4 after them are
/// read, unused: the super-block's quants): the 8 6-bit scales, then the 8 6-bit minimums, a
/// byte each. Built in GPRs and stored, the 16 bytes were read back as one vector before any
/// scale could widen (a store-forwarding stall): Q4_K against 4 fp32 rows 11.2-11.7 -> 12.3-12.8
/// Gweights/s on a Zen 5, one row +2-5% (nnsc-bench-quant-formats). The loader's decoders keep
/// the scalar q4KScalesMins, against which the kernel tests check these kernels' results.
inline __m128i q4KScalesMinsInRegister(const uint8_t *packed) {
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i *>(packed));
  const __m128i low =
      _mm_srlv_epi32(_mm_shuffle_epi32(w, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4));
  const __m128i high =
      _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(w, _MM_SHUFFLE(1, 1, 0, 0)), 6),
                                   _mm_setr_epi32(0, 0x03030303, 0, 0x03030303)),
                     4);
  return _mm_or_si128(
      _mm_and_si128(low, _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f)), high);
}

/// A super-block's scales (32-weight sub-blocks for Q4_K, Q5_K and IQ4_XS, 16 weights for Q2_K,
/// Q3_K and Q6_K) and minimums (Q2_K, Q4_K, Q5_K), exact in fp32 as dequantize*() computes them:
/// decode() fills Q4_K's, Q5_K's and IQ4_XS's (it does nothing for the others), unpack() the
/// others' with their quants.
template <QuantFormat F> struct SuperBlockScales {
  static constexpr int Groups = hasNibbleSubBlocks(F) ? 8 : 16;
  float scales[Groups];
  float minimums[hasSubBlockMinimums(F) ? Groups : 1];

  /// Q2_K, Q3_K, Q6_K: the 256 quants of `block` into q (64-byte aligned), the scales (and
  /// minimums) here.
  template <class Isa> void unpack(const uint8_t *block, int8_t *q) {
    if constexpr (F == QuantFormat::Q2_K)
      unpackQ2_K(block, q, scales, minimums);
    else if constexpr (F == QuantFormat::Q3_K)
      unpackQ3_K(block, q, scales);
    else if constexpr (F == QuantFormat::Q6_K)
      Isa::unpackQ6K(block, q, scales);
  }

  void decode(const uint8_t *block) {
    if constexpr (F == QuantFormat::IQ4_XS) {
      // unpackIQ4_XS's d * (ls - 32), 8 lanes at once: ls's low nibble at bit 4 j of the word
      // scales_l, its top 2 bits at bit 2 j of scales_h.
      uint32_t low;
      uint16_t high;
      std::memcpy(&high, block + 2, sizeof high);
      std::memcpy(&low, block + 4, sizeof low);
      const __m256i lowBits =
          _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(low)),
                                             _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                           _mm256_set1_epi32(0x0f));
      const __m256i highBits = _mm256_and_si256(
          _mm256_srlv_epi32(_mm256_set1_epi32(high), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
          _mm256_set1_epi32(3));
      const __m256i ls = _mm256_or_si256(lowBits, _mm256_slli_epi32(highBits, 4));
      _mm256_storeu_ps(
          scales, _mm256_mul_ps(_mm256_set1_ps(half(block)),
                                _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
    } else if constexpr (hasNibbleSubBlocks(F)) {
      // Widened 8 at a time (AVX2, the baseline of both including files): a scalar loop
      // here compiled to a byte extract per value and cost a third of the kernel.
      const __m128i bytes = q4KScalesMinsInRegister(block + 4);
      auto widen8 = [](__m128i v, float factor, float *out) {
        _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_set1_ps(factor),
                                            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))));
      };
      widen8(bytes, half(block), scales);
      widen8(_mm_srli_si128(bytes, 8), half(block + 2), minimums);
    }
  }
};

/// The quants [p W, p W + W) of sub-blocks 2g (`lo`) and 2g + 1 (`hi`) of the Q4_K, Q5_K or
/// IQ4_XS super-block at `block`, as exact fp32 integers (IQ4_XS: codebook values).
template <class Isa, QuantFormat F>
inline void subBlockPairQuants(const uint8_t *block, int g, std::ptrdiff_t p, typename Isa::V &lo,
                               typename Isa::V &hi) {
  constexpr std::ptrdiff_t W = Isa::W;
  const std::ptrdiff_t group = 32 * std::ptrdiff_t(g) + p * W; // of the nibbles and of qh
  if constexpr (F == QuantFormat::IQ4_XS) {
    // Sub-block j's 16 bytes at 8 + 16 j hold its weights l (low nibble) and 16 + l (high), as
    // an IQ4_NL block does; lanes [p W, p W + W) are a half of W of those bytes' nibbles. The
    // half not taken here is the one another p takes, from the same bytes: the compiler keeps
    // one lookup of each (checked in the disassembly: per sub-block pair and row 4 vpermps on
    // AVX-512, 8 vpshufb on AVX2).
    const std::ptrdiff_t at = 8 + 32 * std::ptrdiff_t(g) + (p * W) % 16;
    typename Isa::V lowNibbles, highNibbles;
    Isa::iq4nl(block + at, lowNibbles, highNibbles);
    lo = p * W < 16 ? lowNibbles : highNibbles;
    Isa::iq4nl(block + at + 16, lowNibbles, highNibbles);
    hi = p * W < 16 ? lowNibbles : highNibbles;
  } else if constexpr (F == QuantFormat::Q4_K) {
    Isa::q4(block + 16 + group, lo, hi);
  } else { // qh at 16, the nibbles at 48
    Isa::q5K(block + 48 + group, block + 16 + p * W, 2 * g, lo, hi);
  }
}

/// Sub-block (or group of 16) s's scale * q (- minimum) as dequantize*() computes it, in one FMA
/// where there is a minimum: a scale (an fp16 d times a quant scale of at most 8 bits) times a
/// quant of at most 8 bits has at most 24 significant bits, so the product is exact and the
/// FMA's one rounding is the subtraction's.
template <class Isa, QuantFormat F>
inline typename Isa::V scaledWeights(const SuperBlockScales<F> &sb, int s, typename Isa::V q) {
  if constexpr (hasSubBlockMinimums(F))
    return Isa::fma(Isa::set1(sb.scales[s]), q, Isa::set1(-sb.minimums[s]));
  else
    return Isa::mul(Isa::set1(sb.scales[s]), q);
}

/// The exact weights [p W, p W + W) of sub-blocks 2g (`lo`) and 2g + 1 (`hi`) of a Q4_K, Q5_K
/// or IQ4_XS super-block whose scales `sb` decoded.
template <class Isa, QuantFormat F>
inline void subBlockPairWeights(const SuperBlockScales<F> &sb, const uint8_t *block, int g,
                                std::ptrdiff_t p, typename Isa::V &lo, typename Isa::V &hi) {
  subBlockPairQuants<Isa, F>(block, g, p, lo, hi);
  lo = scaledWeights<Isa, F>(sb, 2 * g, lo);
  hi = scaledWeights<Isa, F>(sb, 2 * g + 1, hi);
}

/// The exact weights [16 c + p W, 16 c + p W + W) of a Q2_K, Q3_K or Q6_K super-block unpacked
/// into `q` and `sb`.
template <class Isa, QuantFormat F>
inline typename Isa::V sixteenWeights(const SuperBlockScales<F> &sb, const int8_t *q, int c,
                                      std::ptrdiff_t p) {
  return scaledWeights<Isa, F>(sb, c, Isa::q8(q + 16 * std::ptrdiff_t(c) + p * Isa::W));
}

/// A row of `cols` K-quant weights as stored, widened to its exact fp32 weights into `out` (the
/// widened tiles of QuantGemvWidenedTile.h).
template <class Isa, QuantFormat F>
void widenKQuantRow(const uint8_t *row, int64_t cols, float *out) {
  constexpr std::ptrdiff_t W = Isa::W;
  constexpr int64_t Bytes = quantBlockBytes(F);
  SuperBlockScales<F> sb;
  alignas(64) int8_t q[kKQuantBlock];
  for (int64_t k = 0; k < cols / kKQuantBlock; ++k) {
    const uint8_t *block = row + k * Bytes;
    float *o = out + k * kKQuantBlock;
    if constexpr (hasNibbleSubBlocks(F)) {
      sb.decode(block);
      for (int g = 0; g < 4; ++g)
        for (std::ptrdiff_t p = 0; p < 32 / W; ++p) {
          typename Isa::V lo, hi;
          subBlockPairWeights<Isa, F>(sb, block, g, p, lo, hi);
          Isa::store(o + 64 * std::ptrdiff_t(g) + p * W, lo);
          Isa::store(o + 64 * std::ptrdiff_t(g) + 32 + p * W, hi);
        }
    } else {
      sb.template unpack<Isa>(block, q);
      for (int c = 0; c < 16; ++c)
        for (std::ptrdiff_t p = 0; p < 16 / W; ++p)
          Isa::store(o + 16 * std::ptrdiff_t(c) + p * W, sixteenWeights<Isa, F>(sb, q, c, p));
    }
  }
}

/// Rows [r, r + RB) of W against activation rows [b, b + BB). `Factored` (BB = 1 only): the
/// factored form, `subSums` holding sum(x) of every 32 activations of row b (the minimums'
/// terms); otherwise every weight is widened exactly.
template <class Isa, QuantFormat F, int RB, int BB, bool Factored, typename T>
void kQuantBlock(const QuantGemvArgs<T> &a, int64_t r, int64_t b, const float *subSums) {
  static_assert(!Factored || BB == 1, "the factored form takes one activation row");
  using V = typename Isa::V;
  constexpr int W = Isa::W;
  constexpr int64_t Bytes = quantBlockBytes(F);
  V acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = Isa::zero();
  const uint8_t *w = a.w + r * a.rowBytes;
  const T *x = a.x + b * a.xStride;
  // Q4_K and Q5_K, factored: per lane s, the sum over super-blocks of sub-block s's minimum *
  // sum(x) (one AVX2 FMA per super-block and row; 8 scalar ones cost 5-10% of the kernel).
  __m256 minimumTerms[RB];
  for (int i = 0; i < RB; ++i)
    minimumTerms[i] = _mm256_setzero_ps();
  SuperBlockScales<F> sb[RB];
  alignas(64) int8_t q[hasNibbleSubBlocks(F) ? 1 : RB][kKQuantBlock]; // unpacked quants
  const int64_t ahead = prefetchGroups<RB>(a.rowBytes, PrefetchBytesAhead);
  for (int64_t k = 0; k < a.cols / kKQuantBlock; ++k) {
    if (b == 0) // later activation tiles of these rows find their blocks prefetched
      prefetchGroupAhead<RB, Bytes>(w, a.rowBytes, k, ahead);
    const uint8_t *blocks[RB];
    for (int i = 0; i < RB; ++i)
      blocks[i] = w + i * a.rowBytes + k * Bytes;
    const T *xk = x + k * kKQuantBlock;
    if constexpr (hasNibbleSubBlocks(F)) {
      for (int i = 0; i < RB; ++i) {
        sb[i].decode(blocks[i]);
        if constexpr (Factored && hasSubBlockMinimums(F))
          minimumTerms[i] = _mm256_fmadd_ps(_mm256_loadu_ps(sb[i].minimums),
                                            _mm256_loadu_ps(subSums + 8 * k), minimumTerms[i]);
      }
      for (int g = 0; g < 4; ++g) { // 64 weights: sub-blocks 2g (low nibbles) and 2g + 1
        if constexpr (Factored) {
          V dotLo[RB], dotHi[RB];
          for (int p = 0; p < 32 / W; ++p) {
            const V xlo = Isa::load(xk + 64 * g + p * W), xhi = Isa::load(xk + 64 * g + 32 + p * W);
            for (int i = 0; i < RB; ++i) {
              V lo, hi;
              subBlockPairQuants<Isa, F>(blocks[i], g, p, lo, hi);
              dotLo[i] = p ? Isa::fma(lo, xlo, dotLo[i]) : Isa::mul(lo, xlo);
              dotHi[i] = p ? Isa::fma(hi, xhi, dotHi[i]) : Isa::mul(hi, xhi);
            }
          }
          for (int i = 0; i < RB; ++i) {
            acc[i][0] = Isa::fma(Isa::set1(sb[i].scales[2 * g]), dotLo[i], acc[i][0]);
            acc[i][0] = Isa::fma(Isa::set1(sb[i].scales[2 * g + 1]), dotHi[i], acc[i][0]);
          }
        } else {
          for (int p = 0; p < 32 / W; ++p) {
            V xlo[BB], xhi[BB];
            for (int j = 0; j < BB; ++j) {
              xlo[j] = Isa::load(xk + j * a.xStride + 64 * g + p * W);
              xhi[j] = Isa::load(xk + j * a.xStride + 64 * g + 32 + p * W);
            }
            for (int i = 0; i < RB; ++i) {
              V lo, hi;
              subBlockPairWeights<Isa, F>(sb[i], blocks[i], g, p, lo, hi);
              for (int j = 0; j < BB; ++j) {
                acc[i][j] = Isa::fma(lo, xlo[j], acc[i][j]);
                acc[i][j] = Isa::fma(hi, xhi[j], acc[i][j]);
              }
            }
          }
        }
      }
    } else {
      // The quants unpacked into a small buffer once per super-block and row, then widened 16
      // at a time: for Q6_K faster than widening them from ql and qh in registers (9.6-10.3
      // against 11.6 Gweights/s at one row, nnsc-bench-quant-formats). 16 weights share a
      // scale, so the factored form saves nothing and every row count takes the exact weights.
      // Q6_K's unpack in 512-bit registers took its one-row rate from 21-24 to 30-33
      // Gweights/s on a Zen 5; Q2_K's and Q3_K's two-bit planes so unpacked gained nothing
      // (20-22 either way), their time is in the widening.
      for (int i = 0; i < RB; ++i)
        sb[i].template unpack<Isa>(blocks[i], q[i]);
      for (int c = 0; c < 16; ++c)
        for (int p = 0; p < 16 / W; ++p) {
          V xs[BB];
          for (int j = 0; j < BB; ++j)
            xs[j] = Isa::load(xk + j * a.xStride + 16 * c + p * W);
          for (int i = 0; i < RB; ++i) {
            const V weight = sixteenWeights<Isa, F>(sb[i], q[i], c, p);
            for (int j = 0; j < BB; ++j)
              acc[i][j] = Isa::fma(weight, xs[j], acc[i][j]);
          }
        }
    }
  }
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    const float minimumTerm = sum8(minimumTerms[i]);
    for (int j = 0; j < BB; ++j) {
      T *out = a.y + (b + j) * a.yStride + r + i;
      const float v = Isa::reduce(acc[i][j]) - minimumTerm + bias;
      store(out, a.accumulate ? widen(*out) + v : v);
    }
  }
}

/// Weight rows [r, r + RB) against every activation row, BatchBlock rows at a time; a last
/// row left alone takes Q4_K's and Q5_K's factored form unless the product is `exact`.
template <class Isa, QuantFormat F, int RB, typename T>
void kQuantRowBlock(const QuantGemvArgs<T> &a, int64_t r, const float *subSums) {
  forBatchTiles<Isa::BatchBlock>(a.batch, [&](auto rows, int64_t b) {
    constexpr int BB = decltype(rows)::value;
    if (BB == 1 && !a.exact)
      kQuantBlock<Isa, F, RB, BB, BB == 1>(a, r, b, subSums);
    else
      kQuantBlock<Isa, F, RB, BB, false>(a, r, b, nullptr);
  });
}

template <class Isa, QuantFormat F, int RB, typename T>
void kQuantRows(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  // sum(x) per 32 activations of the row the factored form takes (blockMinSums with Q4_1's
  // factor 1); Q6_K has no minimums.
  const float *subSums = hasNibbleSubBlocks(F) && hasSubBlockMinimums(F) &&
                                 lastTileIsOneRow<Isa::BatchBlock>(a.batch) && !a.exact
                             ? blockMinSums<Isa, QuantFormat::Q4_1>(a, a.batch - 1)
                             : nullptr;
  int64_t r = rowBegin;
  for (; r + RB <= rowEnd; r += RB)
    kQuantRowBlock<Isa, F, RB>(a, r, subSums);
  for (; r < rowEnd; ++r)
    kQuantRowBlock<Isa, F, 1>(a, r, subSums);
}

/// onAnyFormat for the K-quants (IQ4_XS included); nothing for the 32-weight formats
/// (onBlockFormat).
template <typename Fn> void onKQuantFormat(QuantFormat format, const Fn &f) {
  onAnyFormat(format, [&](auto c) {
    if constexpr (isKQuant(decltype(c)::value))
      f(c);
  });
}

/// Output columns [rowBegin, rowEnd) of a K-quant product. A single activation row leaves
/// registers for more weight rows.
template <class Isa, typename T>
void kQuantGemvOn(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd) {
  onKQuantFormat(a.format, [&](auto format) {
    constexpr QuantFormat F = decltype(format)::value;
    if (a.batch == 1)
      kQuantRows<Isa, F, Isa::SingleRowBlock>(a, rowBegin, rowEnd);
    else
      kQuantRows<Isa, F, Isa::RowBlock>(a, rowBegin, rowEnd);
  });
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVKQUANTKERNEL_H

//===- QuantGemvAvx512Bf16.cpp - 4- and 5-bit GEMV on vdpbf16ps -*- C++ -*-===//
//
// Compiled for AVX-512 F/BW/VL and BF16 (see runtime/CMakeLists.txt); QuantGemv.cpp calls it
// only where the CPU has them (QuantIsa::Avx512Bf16), for bf16 activations against Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K, IQ4_XS or Q6_K blocks: a bf16 decode step. The generic kernels
// widen every weight to fp32 and convert it from an integer, 8 vector operations per block and row
// on AVX-512; here a block's 32 weights become bf16 without a conversion and meet the bf16
// activations in one vdpbf16ps each 32, about 4.5 operations per block and row, the conversion
// shared by up to 4 activation rows.
//
// A weight's quant q becomes the bf16 value 1 + q / 16 (exact: four fraction bits of seven):
// q shifted to bits 3-6 of its 16-bit lane, under the exponent of 1.0, in a shift and a
// ternary logic op. vdpbf16ps multiplies bf16 pairs exactly into fp32 and sums them into an
// fp32 lane, so each lane gets S = sum (1 + q / 16) x over its weights, and since
// d q = 16 d (1 + q / 16) - 16 d,
//   sum over a block of (d q + m) x = 16 d S_block + (m - 16 d) sum_block x     (m = -8 d: Q4_0)
// The 5-bit formats take 1 + q / 32 (five fraction bits, the fifth bit of q in the mantissa's
// bit 6 under a mask from the block's word of fifth bits) and 32 d in place of 16 d (m = -16 d:
// Q5_0); their bound below has 64 |d| for 32 |d|. The first term is one FMA per two blocks
// against their K d (K = 16 or 32) spread over their lanes; the second, like the generic
// kernel's minimum terms, two vector FMAs per 16 blocks against the blocks' sums of x (fp32,
// from the exact widening of x). The result is the fp32 sum of the products of the activations
// with the file's dequantized weights, rounded differently: within
// gamma_n * sum (|d q| + |m| + 32 |d|) |x| (vdpbf16ps flushes denormal inputs and outputs to
// zero, which moves a result by less than 2^-126 per product), then rounded once to bf16.
//
// IQ4_NL's codebook values (integers in [-127, 113]) are exact in bf16, so a nibble becomes
// its value by one vpermw from a table of them and S is the block's sum of kv[q] x itself: the
// result is d S, with no second term (K = 1).
//
// The super-block formats with 32-weight sub-blocks take the same conversions per pair of
// sub-blocks (superBlockRows): Q4_K's and Q5_K's 32 bytes of nibbles hold weight l of the even
// sub-block (low nibble) and of the odd one (high), so each half meets the activations in
// their own order, with the sub-block's scale s = d * sc as its K s and the minimum m = dmin
// * mn in the second term, -(K s + m) sum(x) per sub-block (8 lanes per super-block); IQ4_XS's
// sub-blocks are IQ4_NL's layout under a scale each, against the pairs' layout.
//
// Q6_K's 6-bit quants (16-weight sub-blocks, q6KRows) are unpacked to bytes in registers
// (Avx512::q6KHalf) and interleaved with the byte 0x3f: the 16-bit lane 0x3f00 | q is the
// bf16 0.5 + q / 256, exact, in one vpunpck[lh]bw per 32 weights. Since s (q - 32) = 256 s (0.5
// + q / 256) - 160 s, a sub-block's sum is 256 s S - 160 s sum(x), against activations laid
// out in the unpack's order (q6KActivations).
//
//===----------------------------------------------------------------------===//

#include "QuantGemvAvx512Isa.h"
#include "QuantGemvIsa.h"
#include "QuantGemvKQuantKernel.h"

#include <type_traits>

namespace nnsc::kernels {

namespace {

constexpr int PairBlocks = 2; // blocks per vdpbf16ps pair of registers

/// The denominator K of the bf16 value 1 + q / K a quant becomes: 16 for 4 bits (q in the
/// mantissa's bits 3-6), 32 for 5 (bits 2-6); 1 for IQ4_NL, whose codebook value is the bf16.
template <QuantFormat F> constexpr float fractionDenominator() {
  return F == QuantFormat::IQ4_NL ? 1.0f : isQ5(F) ? 32.0f : 16.0f;
}

/// Whether the sums carry a second term: all but IQ4_NL, whose bf16 weights are its values.
template <QuantFormat F> constexpr bool hasSecondTerm() { return F != QuantFormat::IQ4_NL; }

/// The bytes of two blocks' quants widened to 16-bit lanes: lane t holds byte t % 16 of block
/// t / 16, whose low nibble is weight t % 16 and high nibble weight 16 + t % 16.
/// `lo` and `hi` are those nibbles as bf16 1 + q / 16.
inline void onePlusSixteenths(const uint8_t *qs, __mmask32 valid, __m512i &lo, __m512i &hi) {
  const __m512i bytes = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(valid, qs));
  const __m512i mantissa = _mm512_set1_epi16(0x0078), one = _mm512_set1_epi16(0x3f80);
  // (t & bits 3-6) | the exponent of 1.0
  lo = _mm512_ternarylogic_epi32(_mm512_slli_epi16(bytes, 3), mantissa, one, 0xea);
  hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(bytes, 1), mantissa, one, 0xea);
}

/// kIQ4NLValues as 32 bf16 lanes, the 16 values twice (exact: integers of 8 bits).
inline __m512i codebookTable() {
  const __m512 values = _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kIQ4NLValues))));
  return (__m512i)_mm512_cvtne2ps_pbh(values, values);
}

/// The same lanes for two IQ4_NL blocks: the nibbles' codebook values as bf16, looked up in
/// codebookTable() by one vpermw each (it reads an index's low 5 bits; the table repeats the
/// 16 values, so the high nibble's low bit in bit 4 of the low nibble's index is ignored).
inline void codebookValues(const uint8_t *qs, __mmask32 valid, __m512i table, __m512i &lo,
                           __m512i &hi) {
  const __m512i bytes = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(valid, qs));
  lo = _mm512_permutexvar_epi16(bytes, table);
  hi = _mm512_permutexvar_epi16(_mm512_srli_epi16(bytes, 4), table);
}

/// The same for two Q5_0/Q5_1 blocks whose quants (4 bytes of fifth bits, 16 of nibbles) are at
/// `first` and, with `both`, right after it: lane t of `lo` and `hi` is the bf16 1 + q / 32 of
/// weight t % 16 (`lo`) or 16 + t % 16 (`hi`) of block t / 16. The nibble goes to bits 2-5 of
/// the mantissa; the fifth bit, bit t % 16 (or 16 + t % 16) of the block's word, adds bit 6
/// under a mask.
inline void onePlusThirtySeconds(const uint8_t *first, bool both, __m512i &lo, __m512i &hi) {
  constexpr std::ptrdiff_t QuantBytes = quantBlockQuantBytes(QuantFormat::Q5_0); // = Q5_1's
  uint32_t h0, h1 = 0;
  constexpr std::ptrdiff_t Nibbles = sizeof h0; // after the fifth bits
  const __m128i second =
      both ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(first + QuantBytes + Nibbles))
           : _mm_setzero_si128();
  const __m512i bytes = _mm512_cvtepu8_epi16(_mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(first + Nibbles))),
      second, 1));
  std::memcpy(&h0, first, sizeof h0);
  if (both)
    std::memcpy(&h1, first + QuantBytes, sizeof h1);
  const __mmask32 fifthLo = (h0 & 0xffffu) | (h1 << 16), fifthHi = (h0 >> 16) | (h1 & 0xffff0000u);
  const __m512i mantissa = _mm512_set1_epi16(0x003c), one = _mm512_set1_epi16(0x3f80);
  const __m512i fifth = _mm512_set1_epi16(0x0040);
  lo = _mm512_ternarylogic_epi32(_mm512_slli_epi16(bytes, 2), mantissa, one, 0xea);
  hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(bytes, 2), mantissa, one, 0xea);
  lo = _mm512_mask_add_epi16(lo, fifthLo, lo, fifth); // bit 6 is clear: adding sets it
  hi = _mm512_mask_add_epi16(hi, fifthHi, hi, fifth);
}

/// An activation row laid out for the pairs: per two blocks, the bf16 activations of weights
/// 0-15 of both blocks (32 lanes), then of weights 16-31 (zero past the last block); then per
/// block sum(x) times the factor of d in the second term (-K, and for Q4_0 and Q5_0 also their
/// -8 or -16 in the minimum's sums) and times the factor of m (Q4_1, Q5_1), padded to 16
/// blocks.
struct Activations {
  const uint16_t *pairs;
  const float *scaleSums, *minimumSums;
};

/// The layouts of activation rows [0, batch), per thread, reused (no allocation once the
/// buffers have grown to the largest product).
template <QuantFormat F> const Activations *layoutActivations(const QuantGemvArgs<uint16_t> &a) {
  thread_local std::vector<uint16_t> pairs;
  thread_local std::vector<float> sums;
  thread_local std::vector<Activations> rows;
  const int64_t blocks = a.cols / BlockWeights;
  const int64_t padded = (blocks + 15) / 16 * 16, rowPairs = (blocks + 1) / 2 * 64;
  pairs.assign(size_t(a.batch * rowPairs), 0);
  sums.assign(size_t(a.batch * 2 * padded), 0.0f);
  rows.clear();
  for (int64_t b = 0; b < a.batch; ++b) {
    const uint16_t *x = a.x + b * a.xStride;
    uint16_t *rowPairsAt = pairs.data() + b * rowPairs;
    float *scaleSums = sums.data() + b * 2 * padded, *minimumSums = scaleSums + padded;
    for (int64_t k = 0; k < blocks; ++k) {
      uint16_t *group = rowPairsAt + (k / 2) * 64 + (k % 2) * 16;
      std::memcpy(group, x + k * 32, 16 * sizeof(uint16_t));
      std::memcpy(group + 32, x + k * 32 + 16, 16 * sizeof(uint16_t));
      const float sum =
          Avx512::reduce(Avx512::add(Avx512::load(x + k * 32), Avx512::load(x + k * 32 + 16)));
      scaleSums[k] = -fractionDenominator<F>() * sum; // exact
      minimumSums[k] = quantHasMinimum(F) ? sum : -quantOffset<F>() * sum;
    }
    rows.push_back({rowPairsAt, scaleSums, minimumSums});
  }
  return rows.data();
}

/// Rows [r, r + RB) of W against activation rows [b, b + BB) laid out in `x`: each pair of
/// blocks of a weight row is converted once for the BB activation rows.
template <QuantFormat F, int RB, int BB>
void pairRows(const QuantGemvArgs<uint16_t> &a, int64_t r, int64_t b, const Activations *x) {
  using Row = SplitRow<F>;
  constexpr int64_t Bytes = quantBlockBytes(F);
  const uint8_t *w = a.w + r * a.rowBytes;
  const int64_t blocks = a.cols / BlockWeights;
  const uint8_t *qs = Row::quants(w, blocks);
  const __m512i codebook = F == QuantFormat::IQ4_NL ? codebookTable() : __m512i();
  __m512 acc[RB][BB];
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = _mm512_setzero_ps();
  for (int64_t chunk = 0; chunk < blocks; chunk += 16) {
    const int n = int(std::min<int64_t>(16, blocks - chunk));
    __m512 dK[RB];
    for (int i = 0; i < RB; ++i) {
      const uint8_t *row = w + i * a.rowBytes;
      const __m512 d = Avx512::widenHalves(Row::scales(row) + 2 * chunk, n);
      const __m512 m =
          quantHasMinimum(F) ? Avx512::widenHalves(Row::minimums(row, blocks) + 2 * chunk, n) : d;
      // The chunk's second terms (lanes past the last block are 0 in both factors).
      if constexpr (hasSecondTerm<F>())
        for (int j = 0; j < BB; ++j) {
          acc[i][j] = _mm512_fmadd_ps(d, _mm512_loadu_ps(x[j].scaleSums + chunk), acc[i][j]);
          acc[i][j] = _mm512_fmadd_ps(m, _mm512_loadu_ps(x[j].minimumSums + chunk), acc[i][j]);
        }
      dK[i] = _mm512_mul_ps(d, _mm512_set1_ps(fractionDenominator<F>())); // exact
    }
    for (int g = 0; g * PairBlocks < n; ++g) {
      const int64_t k = chunk + int64_t(g) * PairBlocks; // the pair's first block
      const bool both = g * PairBlocks + 1 < n;
      if (b == 0) // later activation tiles of these rows find their blocks prefetched
        for (int p = 0; p < (both ? 2 : 1); ++p) // as in QuantGemvKernel.h
          prefetchGroupAhead<RB, Bytes>(w, a.rowBytes, k + p, PrefetchGroupsAhead);
      __m512bh xlo[BB], xhi[BB];
      for (int j = 0; j < BB; ++j) {
        const uint16_t *xp = x[j].pairs + (k / 2) * 64;
        xlo[j] = (__m512bh)_mm512_loadu_si512(xp);
        xhi[j] = (__m512bh)_mm512_loadu_si512(xp + 32);
      }
      // Lanes 0-7 belong to block k, lanes 8-15 to block k + 1.
      const __m512i spread = _mm512_set_epi32(2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1,
                                              2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g, 2 * g, 2 * g,
                                              2 * g, 2 * g, 2 * g, 2 * g, 2 * g);
      for (int i = 0; i < RB; ++i) {
        __m512i lo, hi;
        const uint8_t *pair = qs + i * a.rowBytes + k * Row::QuantBytes;
        const __mmask32 valid = both ? ~__mmask32(0) : __mmask32(0xffff);
        if constexpr (isQ5(F))
          onePlusThirtySeconds(pair, both, lo, hi);
        else if constexpr (F == QuantFormat::IQ4_NL)
          codebookValues(pair, valid, codebook, lo, hi);
        else
          onePlusSixteenths(pair, valid, lo, hi);
        const __m512 scale = _mm512_permutexvar_ps(spread, dK[i]);
        for (int j = 0; j < BB; ++j) {
          __m512 s = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)lo, xlo[j]);
          s = _mm512_dpbf16_ps(s, (__m512bh)hi, xhi[j]);
          acc[i][j] = _mm512_fmadd_ps(scale, s, acc[i][j]);
        }
      }
    }
  }
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    for (int j = 0; j < BB; ++j) {
      uint16_t *out = a.y + (b + j) * a.yStride + r + i;
      const float v = _mm512_reduce_add_ps(acc[i][j]) + bias;
      store(out, a.accumulate ? widen(*out) + v : v);
    }
  }
}

//===--- Super-blocks of 32-weight sub-blocks: Q4_K, Q5_K, IQ4_XS ----------===//

/// Per activation row, sum(x) of each 32 activations (fp32 from the exact widening of x), the
/// second terms' factors; per thread, reused.
const float *subBlockSums(const QuantGemvArgs<uint16_t> &a) {
  thread_local std::vector<float> sums;
  const int64_t subBlocks = a.cols / 32;
  sums.resize(size_t(a.batch * subBlocks));
  for (int64_t b = 0; b < a.batch; ++b) {
    const uint16_t *x = a.x + b * a.xStride;
    for (int64_t s = 0; s < subBlocks; ++s)
      sums[size_t(b * subBlocks + s)] =
          Avx512::reduce(Avx512::add(Avx512::load(x + 32 * s), Avx512::load(x + 32 * s + 16)));
  }
  return sums.data();
}

/// Sub-blocks 2g (`lo`) and 2g + 1 (`hi`) of a Q5_K super-block as bf16 1 + q / 32, lane l
/// weight l: the nibbles of the 32 bytes at `qs` in bits 2-5 of the mantissa, and bit 6 where
/// bit 2g (lo) or 2g + 1 (hi) of qh[l] is set.
inline void q5KThirtySeconds(const uint8_t *qs, const uint8_t *qh, int g, __m512i &lo,
                             __m512i &hi) {
  const __m512i bytes =
      _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(qs)));
  const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qh));
  const __m512i mantissa = _mm512_set1_epi16(0x003c), one = _mm512_set1_epi16(0x3f80);
  const __m512i fifth = _mm512_set1_epi16(0x0040);
  lo = _mm512_ternarylogic_epi32(_mm512_slli_epi16(bytes, 2), mantissa, one, 0xea);
  hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(bytes, 2), mantissa, one, 0xea);
  lo = _mm512_mask_add_epi16(lo, _mm256_test_epi8_mask(high, _mm256_set1_epi8(char(1 << (2 * g)))),
                             lo, fifth);
  hi = _mm512_mask_add_epi16(
      hi, _mm256_test_epi8_mask(high, _mm256_set1_epi8(char(1 << (2 * g + 1)))), hi, fifth);
}

/// Rows [r, r + RB) of W against activation rows [b, b + BB): per super-block the scales (and
/// the second terms) once per weight row, each pair of sub-blocks converted once for the BB
/// activation rows, which are read as they are (Q4_K, Q5_K) or from `pairs` (IQ4_XS).
template <QuantFormat F, int RB, int BB>
void superBlockRows(const QuantGemvArgs<uint16_t> &a, int64_t r, int64_t b,
                    const Activations *pairs, const float *sums) {
  constexpr int64_t Bytes = quantBlockBytes(F);
  constexpr bool Codebook = F == QuantFormat::IQ4_XS;
  constexpr float K = F == QuantFormat::Q5_K ? 32.0f : 16.0f;
  const int64_t subBlocks = a.cols / 32;
  const uint8_t *w = a.w + r * a.rowBytes;
  const __m512i codebook = Codebook ? codebookTable() : __m512i();
  __m512 acc[RB][BB];
  __m256 second[RB][BB]; // per sub-block lane: (K s + m) sum(x)
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j) {
      acc[i][j] = _mm512_setzero_ps();
      second[i][j] = _mm256_setzero_ps();
    }
  SuperBlockScales<F> sb[RB];
  const int64_t ahead = prefetchGroups<RB>(a.rowBytes, PrefetchBytesAhead);
  for (int64_t k = 0; k < a.cols / kKQuantBlock; ++k) {
    if (b == 0) // later activation tiles of these rows find their blocks prefetched
      prefetchGroupAhead<RB, Bytes>(w, a.rowBytes, k, ahead);
    const uint8_t *blocks[RB];
    for (int i = 0; i < RB; ++i) {
      blocks[i] = w + i * a.rowBytes + k * Bytes;
      sb[i].decode(blocks[i]);
      if constexpr (!Codebook) {
        const __m256 factor = _mm256_fmadd_ps(_mm256_set1_ps(K), _mm256_loadu_ps(sb[i].scales),
                                              _mm256_loadu_ps(sb[i].minimums));
        for (int j = 0; j < BB; ++j)
          second[i][j] = _mm256_fmadd_ps(
              factor, _mm256_loadu_ps(sums + (b + j) * subBlocks + 8 * k), second[i][j]);
      }
    }
    for (int g = 0; g < 4; ++g) {
      __m512bh xlo[BB], xhi[BB];
      for (int j = 0; j < BB; ++j) {
        const uint16_t *xp = Codebook ? pairs[j].pairs + (4 * k + g) * 64
                                      : a.x + (b + j) * a.xStride + k * kKQuantBlock + 64 * g;
        xlo[j] = (__m512bh)_mm512_loadu_si512(xp);
        xhi[j] = (__m512bh)_mm512_loadu_si512(xp + 32);
      }
      for (int i = 0; i < RB; ++i) {
        __m512i lo, hi;
        if constexpr (Codebook)
          codebookValues(blocks[i] + 8 + 32 * g, ~__mmask32(0), codebook, lo, hi);
        else if constexpr (F == QuantFormat::Q4_K)
          onePlusSixteenths(blocks[i] + 16 + 32 * g, ~__mmask32(0), lo, hi);
        else
          q5KThirtySeconds(blocks[i] + 48 + 32 * g, blocks[i] + 16, g, lo, hi);
        const float s0 = sb[i].scales[2 * g], s1 = sb[i].scales[2 * g + 1];
        for (int j = 0; j < BB; ++j) {
          if constexpr (Codebook) { // lanes 0-7 sub-block 2g, 8-15 sub-block 2g + 1
            __m512 sum = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)lo, xlo[j]);
            sum = _mm512_dpbf16_ps(sum, (__m512bh)hi, xhi[j]);
            acc[i][j] = _mm512_fmadd_ps(
                _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(s0), _mm512_set1_ps(s1)), sum,
                acc[i][j]);
          } else {
            acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(K * s0),
                                        _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)lo, xlo[j]),
                                        acc[i][j]);
            acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(K * s1),
                                        _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)hi, xhi[j]),
                                        acc[i][j]);
          }
        }
      }
    }
  }
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    for (int j = 0; j < BB; ++j) {
      uint16_t *out = a.y + (b + j) * a.yStride + r + i;
      const float v = _mm512_reduce_add_ps(acc[i][j]) - sum8(second[i][j]) + bias;
      store(out, a.accumulate ? widen(*out) + v : v);
    }
  }
}

//===--- Q6_K: 16-weight sub-blocks -----------------------------------------===//

/// An activation row laid out for q6KRows: per 64 activations, the 32 that vpunpcklbw pairs
/// with the quants (0-7, 16-23, 32-39, 48-55 of the 64), then the other 32; and sum(x) of each
/// 16 (fp32, from the exact widening of x).
struct Q6KActivations {
  const uint16_t *x;
  const float *sums;
};

/// The 16-bit indices of `first`, first + 1, ..., first + 7, then the same 16, 32 and 48 on:
/// the words of each 128-bit lane that vpunpck[lh]bw takes, over two source vectors.
inline __m512i unpackOrder(int16_t first) {
  alignas(64) int16_t index[32];
  for (int16_t i = 0; i < 32; ++i)
    index[i] = int16_t(first + (i / 8) * 16 + i % 8);
  return _mm512_load_si512(index);
}

const Q6KActivations *layoutQ6KActivations(const QuantGemvArgs<uint16_t> &a) {
  thread_local std::vector<uint16_t> xs;
  thread_local std::vector<float> sums;
  thread_local std::vector<Q6KActivations> rows;
  xs.resize(size_t(a.batch * a.cols));
  sums.resize(size_t(a.batch * a.cols / 16));
  rows.clear();
  const __m512i low = unpackOrder(0), high = unpackOrder(8);
  for (int64_t b = 0; b < a.batch; ++b) {
    const uint16_t *x = a.x + b * a.xStride;
    uint16_t *out = xs.data() + b * a.cols;
    float *rowSums = sums.data() + b * a.cols / 16;
    for (int64_t g = 0; g < a.cols; g += 64) {
      const __m512i v0 = _mm512_loadu_si512(x + g), v1 = _mm512_loadu_si512(x + g + 32);
      _mm512_storeu_si512(out + g, _mm512_permutex2var_epi16(v0, low, v1));
      _mm512_storeu_si512(out + g + 32, _mm512_permutex2var_epi16(v0, high, v1));
    }
    for (int64_t k = 0; k < a.cols / 16; ++k)
      rowSums[k] = Avx512::reduce(Avx512::load(x + 16 * k));
    rows.push_back({out, rowSums});
  }
  return rows.data();
}

/// Rows [r, r + RB) of Q6_K W against activation rows [b, b + BB) laid out in `x`: each half
/// super-block's quants unpacked once for the BB activation rows.
template <int RB, int BB>
void q6KRows(const QuantGemvArgs<uint16_t> &a, int64_t r, int64_t b, const Q6KActivations *x) {
  constexpr int64_t Bytes = quantBlockBytes(QuantFormat::Q6_K);
  const uint8_t *w = a.w + r * a.rowBytes;
  const __m512i half = _mm512_set1_epi8(0x3f); // 0x3f00 | q: bf16 0.5 + q / 256
  __m512 acc[RB][BB], second[RB][BB];          // second: per sub-block lane, s sum(x)
  for (int i = 0; i < RB; ++i)
    for (int j = 0; j < BB; ++j)
      acc[i][j] = second[i][j] = _mm512_setzero_ps();
  const int64_t ahead = prefetchGroups<RB>(a.rowBytes, PrefetchBytesAhead);
  for (int64_t k = 0; k < a.cols / kKQuantBlock; ++k) {
    if (b == 0) // later activation tiles of these rows find their blocks prefetched
      prefetchGroupAhead<RB, Bytes>(w, a.rowBytes, k, ahead);
    const uint8_t *blocks[RB];
    __m512 scales[RB]; // 256 s, exact
    for (int i = 0; i < RB; ++i) {
      blocks[i] = w + i * a.rowBytes + k * Bytes;
      const __m512 s = Avx512::q6KScales(blocks[i]);
      for (int j = 0; j < BB; ++j)
        second[i][j] = _mm512_fmadd_ps(s, _mm512_loadu_ps(x[j].sums + 16 * k), second[i][j]);
      scales[i] = _mm512_mul_ps(s, _mm512_set1_ps(256.0f));
    }
    for (std::ptrdiff_t h = 0; h < 2; ++h) {
      __m512i q[RB][2];
      for (int i = 0; i < RB; ++i)
        Avx512::q6KHalf(blocks[i], h, q[i][0], q[i][1]);
      for (int c = 0; c < 2; ++c) { // weights 128 h + 64 c to + 63: sub-blocks 8 h + 4 c + 0-3
        const int64_t at = k * kKQuantBlock + 128 * h + 64 * c;
        __m512bh xlo[BB], xhi[BB];
        for (int j = 0; j < BB; ++j) {
          xlo[j] = (__m512bh)_mm512_loadu_si512(x[j].x + at);
          xhi[j] = (__m512bh)_mm512_loadu_si512(x[j].x + at + 32);
        }
        // Lanes 4 m to 4 m + 3 of both products belong to sub-block 8 h + 4 c + m.
        const __m512i spread = _mm512_add_epi32(
            _mm512_set1_epi32(int(8 * h + 4 * c)),
            _mm512_srli_epi32(
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2));
        for (int i = 0; i < RB; ++i) {
          const __m512bh lo = (__m512bh)_mm512_unpacklo_epi8(q[i][c], half);
          const __m512bh hi = (__m512bh)_mm512_unpackhi_epi8(q[i][c], half);
          const __m512 scale = _mm512_permutexvar_ps(spread, scales[i]);
          for (int j = 0; j < BB; ++j) {
            __m512 sum = _mm512_dpbf16_ps(_mm512_setzero_ps(), lo, xlo[j]);
            sum = _mm512_dpbf16_ps(sum, hi, xhi[j]);
            acc[i][j] = _mm512_fmadd_ps(scale, sum, acc[i][j]);
          }
        }
      }
    }
  }
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    for (int j = 0; j < BB; ++j) {
      uint16_t *out = a.y + (b + j) * a.yStride + r + i;
      const float v =
          _mm512_reduce_add_ps(acc[i][j]) - 160.0f * _mm512_reduce_add_ps(second[i][j]) + bias;
      store(out, a.accumulate ? widen(*out) + v : v);
    }
  }
}

/// Activation rows per tile here: 4, not Avx512::BatchBlock's 8. With 8, a pair of blocks
/// needs 16 activation registers next to the 16 accumulators, and the spills made a batched
/// bf16 decode step's layer products 1.3-1.5x slower (Zen 5, NNSC_PROFILE=1 nns-run with 8
/// sequences, 8 rows per step).
constexpr int PairBatchBlock = 4;

/// Weight rows [r, r + RB) against every activation row, in forBatchTiles' tiles.
template <QuantFormat F, int RB>
void pairRowsAllBatch(const QuantGemvArgs<uint16_t> &a, int64_t r, const Activations *x,
                      const float *sums, const Q6KActivations *q6x) {
  forBatchTiles<PairBatchBlock>(a.batch, [&](auto rows, int64_t b) {
    constexpr int BB = decltype(rows)::value;
    if constexpr (F == QuantFormat::Q6_K)
      q6KRows<RB, BB>(a, r, b, q6x + b);
    else if constexpr (isKQuant(F))
      superBlockRows<F, RB, BB>(a, r, b, x ? x + b : nullptr, sums);
    else
      pairRows<F, RB, BB>(a, r, b, x + b);
  });
}

template <QuantFormat F>
void pairRowsOn(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  // IQ4_XS's sub-blocks meet the pairs' layout (IQ4_NL's, without second terms); Q4_K and Q5_K
  // read the activations as they are, with the sums of each 32.
  const Activations *x = F == QuantFormat::IQ4_XS ? layoutActivations<QuantFormat::IQ4_NL>(a)
                         : isKQuant(F)            ? nullptr
                                                  : layoutActivations<F>(a);
  const float *sums = hasNibbleSubBlocks(F) && F != QuantFormat::IQ4_XS ? subBlockSums(a) : nullptr;
  const Q6KActivations *q6x = F == QuantFormat::Q6_K ? layoutQ6KActivations(a) : nullptr;
  // A single activation row leaves registers for 4 weight rows; several take 2.
  auto run = [&](auto rowBlock) {
    constexpr int RB = decltype(rowBlock)::value;
    int64_t r = rowBegin;
    for (; r + RB <= rowEnd; r += RB)
      pairRowsAllBatch<F, RB>(a, r, x, sums, q6x);
    for (; r < rowEnd; ++r)
      pairRowsAllBatch<F, 1>(a, r, x, sums, q6x);
  };
  if (a.batch == 1)
    run(std::integral_constant<int, 4>());
  else
    run(std::integral_constant<int, 2>());
}

} // namespace

bool quantGemvAvx512Bf16Applies(const QuantGemvArgs<uint16_t> &a) {
  return a.format == QuantFormat::Q4_0 || a.format == QuantFormat::Q4_1 ||
         a.format == QuantFormat::Q5_0 || a.format == QuantFormat::Q5_1 ||
         a.format == QuantFormat::IQ4_NL || a.format == QuantFormat::Q4_K ||
         a.format == QuantFormat::Q5_K || a.format == QuantFormat::IQ4_XS ||
         a.format == QuantFormat::Q6_K;
}

void quantGemvAvx512Bf16(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  switch (a.format) {
  case QuantFormat::Q4_0:
    pairRowsOn<QuantFormat::Q4_0>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q4_1:
    pairRowsOn<QuantFormat::Q4_1>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q5_0:
    pairRowsOn<QuantFormat::Q5_0>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q5_1:
    pairRowsOn<QuantFormat::Q5_1>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::IQ4_NL:
    pairRowsOn<QuantFormat::IQ4_NL>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q4_K:
    pairRowsOn<QuantFormat::Q4_K>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q5_K:
    pairRowsOn<QuantFormat::Q5_K>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::IQ4_XS:
    pairRowsOn<QuantFormat::IQ4_XS>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q6_K:
    pairRowsOn<QuantFormat::Q6_K>(a, rowBegin, rowEnd);
    break;
  default:
    break; // quantGemvAvx512Bf16Applies is false
  }
}

} // namespace nnsc::kernels

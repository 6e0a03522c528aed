//===- QuantGemvBf16Lanes.h - Quants and activations as bf16 lanes -*- C++ -*-===//
//
// Private to runtime/kernels/cpu, for the two files compiled for AVX-512 BF16
// (QuantGemvAvx512Bf16.cpp: the 32-weight block formats; QuantGemvAvx512Bf16KQuant.cpp: the
// super-block formats). How a quant becomes the bf16 lane that vdpbf16ps multiplies, exactly
// (1 + q / 16, 1 + q / 32, or a codebook value), how activation rows are laid out to meet
// them, and the tiles of weight and activation rows both kernels walk. Internal linkage, as
// QuantGemvKernel.h explains.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVBF16LANES_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVBF16LANES_H

#include "QuantGemvAvx512Isa.h"

#include <type_traits>

namespace nnsc::kernels {

/// The super-block formats' vdpbf16ps kernel (QuantGemvAvx512Bf16KQuant.cpp): Q4_K, Q5_K,
/// IQ4_XS and Q6_K, output columns [rowBegin, rowEnd).
void quantGemvAvx512Bf16KQuant(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);

namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

constexpr int PairBlocks = 2; // blocks per vdpbf16ps pair of registers

/// The denominator K of the bf16 value 1 + q / K a quant becomes: 16 for 4 bits (q in the
/// mantissa's bits 3-6), 32 for 5 (bits 2-6); 1 for IQ4_NL, whose codebook value is the bf16.
template <QuantFormat F> constexpr float fractionDenominator() {
  return F == QuantFormat::IQ4_NL ? 1.0f : isQ5(F) ? 32.0f : 16.0f;
}

/// The 16 quant bytes of a block at `qs`, and of the next block if `both` (zeros if not),
/// widened to 16-bit lanes. Plain loads: a masked byte load per pair and row cost the 576-column
/// Q4_1 kernel 5-8% on a Zen 5 (nnsc-bench-quant-formats --dtype bf16).
inline __m512i pairBytes(const uint8_t *qs, bool both) {
  return _mm512_cvtepu8_epi16(
      both ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(qs))
           : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qs))));
}

/// The bytes of two blocks' quants (the second's if `both`) widened to 16-bit lanes: lane t
/// holds byte t % 16 of block t / 16, whose low nibble is weight t % 16 and high nibble weight
/// 16 + t % 16. `lo` and `hi` are those nibbles as bf16 1 + q / 16.
inline void onePlusSixteenths(const uint8_t *qs, bool both, __m512i &lo, __m512i &hi) {
  const __m512i bytes = pairBytes(qs, both);
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
inline void codebookValues(const uint8_t *qs, bool both, __m512i table, __m512i &lo, __m512i &hi) {
  const __m512i bytes = pairBytes(qs, both);
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
/// blocks. The super-block kernel takes IQ4_NL's layout for IQ4_XS's pairs and Q4_1's
/// `minimumSums`, sum(x) of each 32, for Q4_K's and Q5_K's second terms.
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

/// Activation rows per tile here: 4, not Avx512::BatchBlock's 8. With 8, a pair of blocks
/// needs 16 activation registers next to the 16 accumulators, and the spills made a batched
/// bf16 decode step's layer products 1.3-1.5x slower (Zen 5, NNSC_PROFILE=1 nns-run with 8
/// sequences, 8 rows per step).
constexpr int PairBatchBlock = 4;

/// Weight rows [rowBegin, rowEnd) against every activation row: 4 weight rows at a time for a
/// single activation row (registers for them), 2 for several, the rows left one by one; each
/// against the batch in forBatchTiles' tiles of PairBatchBlock rows. Calls
/// block(rowBlock, batchBlock, r, b), the two block sizes as std::integral_constant.
template <class Block>
void forPairTiles(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd,
                  const Block &block) {
  auto rowsOf = [&](auto rowBlock, int64_t r) {
    forBatchTiles<PairBatchBlock>(
        a.batch, [&](auto batchBlock, int64_t b) { block(rowBlock, batchBlock, r, b); });
  };
  auto run = [&](auto rowBlock) {
    constexpr int RB = decltype(rowBlock)::value;
    int64_t r = rowBegin;
    for (; r + RB <= rowEnd; r += RB)
      rowsOf(rowBlock, r);
    for (; r < rowEnd; ++r)
      rowsOf(std::integral_constant<int, 1>(), r);
  };
  if (a.batch == 1)
    run(std::integral_constant<int, 4>());
  else
    run(std::integral_constant<int, 2>());
}

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVBF16LANES_H

//===- QuantGemvAvx512Isa.h - The AVX-512 vector type of the quantized GEMV -*- C++ -*-===//
//
// Private to runtime/kernels/cpu, for the files compiled for AVX-512 F/BW/VL (QuantGemvAvx512.cpp;
// QuantGemvAvx512Bf16*.cpp, with BF16 too): the `Isa` that QuantGemvKernel.h's kernel
// body is instantiated with, whose loads and widenings the vdpbf16ps kernel uses too. Internal
// linkage, as QuantGemvKernel.h explains.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVAVX512ISA_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVAVX512ISA_H

#include "Bf16Avx512.h"
#include "QuantGemvKernel.h"

#include <cassert>

namespace nnsc::kernels {
namespace { // NOLINT: internal linkage per instruction set, see QuantGemvKernel.h

struct Avx512 {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int SingleRowBlock = 4;
  static constexpr int RowBlock = 2;
  /// Activation rows per tile (forBatchTiles): 8 shares each widened weight among twice the
  /// rows of 4, with 16 accumulators at RowBlock 2 (32 registers). 8 sequences decoding in
  /// fp32 on a Zen 5: gate_up_proj 11% and the Q8_0 lm_head 15% faster than with 4
  /// (docs/Engine.md, "Quantized decode", "Activation tiles").
  static constexpr int BatchBlock = 8;
  /// Accumulators of the widened tiles (QuantGemvWidenedTile.h): 4 weight rows by 6 activation
  /// rows, with the 6 activation vectors and a weight vector 31 of the 32 registers.
  static constexpr int WidenedRowBlock = 4;
  static constexpr int WidenedBatchBlock = 6;
  /// Activation rows from which a product widens tiles of weight rows into memory: two
  /// of exactBlock's activation tiles (AVX2's crossover is 12 rows, 3 of its tiles; this one
  /// is not measured on an AVX-512 machine yet).
  static constexpr int64_t WidenedTileMinRows = 16;

  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V load(const float *p) { return _mm512_loadu_ps(p); }
  static V load(const uint16_t *p) {
    return bf16::widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static float reduce(V v) { return _mm512_reduce_add_ps(v); }
  /// out[i] = the sum of v[i]'s lanes: the four vectors transposed and added together, 13
  /// operations against four reductions' 28.
  static void reduce4(const V (&v)[4], float (&out)[4]) {
    // Per 128-bit lane: [a0 + a2, b0 + b2, a1 + a3, b1 + b3], the same of c and d.
    const V ab = _mm512_add_ps(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1]));
    const V cd = _mm512_add_ps(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3]));
    // Per 128-bit lane: the partial sums of a, b, c and d.
    const V abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 half =
        _mm256_add_ps(_mm512_castps512_ps256(abcd),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(abcd), 1)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1)));
  }
  static void store(float *p, V v) { _mm512_storeu_ps(p, v); }
  /// Rounded to bf16 as bf16::narrow rounds (to nearest even; a NaN stays a quiet NaN).
  static void store(uint16_t *p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), bf16::narrow16(v));
  }
  /// The 16 bytes at `qs` widened to 32-bit lanes: their low nibbles as `lo`, high as `hi`.
  /// vpermps with the values 0-15 as its table turns a lane's low 4 bits into their value as a
  /// float, replacing an AND and a conversion (2-4% faster on a Zen 4, nnsc-bench-quant-formats).
  /// The high nibbles are shifted down and converted instead: on a Zen 5 the shuffle pipes,
  /// which the widening to 32-bit lanes and the lookup share, bound the kernel, and the
  /// conversion runs elsewhere (Q4_1 at one fp32 row, one thread: 45-47 -> 47-49 Gweights/s at
  /// 576 columns, 51-53 -> 54-55 at 1536; all lookups, or all conversions, were slower).
  static void q4(const uint8_t *qs, V &lo, V &hi) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qs)));
    lo = _mm512_permutexvar_ps(
        v, _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
  }
  /// IQ4_NL's: the nibbles looked up in kIQ4NLValues as floats, the same one vpermps each.
  static void iq4nl(const uint8_t *qs, V &lo, V &hi) {
    lookupNibbles(qs,
                  _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                      _mm_loadu_si128(reinterpret_cast<const __m128i *>(kIQ4NLValues)))),
                  lo, hi);
  }
  static void lookupNibbles(const uint8_t *qs, V table, V &lo, V &hi) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qs)));
    lo = _mm512_permutexvar_ps(v, table);
    hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);
  }
  /// A Q5_0/Q5_1 block's 32 quants from its 4 bytes of fifth bits and 16 bytes of nibbles at
  /// `qhThenQs` (p = 0). Each lane's 5-bit quant becomes the index of a two-table vpermt2ps
  /// over the floats 0-31, which reads only an index's low 5 bits: the nibble in bits 0-3, and
  /// in bit 4 the lane's fifth bit, rotated there from the broadcast word (bit j for weight j,
  /// 16 + j for weight 16 + j) by a per-lane rotation. On a Zen 5 (nnsc-bench-quant-formats,
  /// one thread, two runs): 36.8-38.8 Gweights/s, against 30.7-32.4 for the nibbles or'ed with
  /// 16 under the word as a mask register and converted, 31-34 with a masked float add of 16 and
  /// with a second, masked vpermps lookup.
  static void q5(const uint8_t *qhThenQs, std::ptrdiff_t, V &lo, V &hi) {
    int32_t bits;
    std::memcpy(&bits, qhThenQs, sizeof bits);
    const __m512i fifth = _mm512_set1_epi32(bits);
    const __m512i v =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qhThenQs + 4)));
    // Rotated right by j - 4 (lo) or 12 + j (hi), mod 32: bit j or 16 + j lands on bit 4.
    const __m512i toBit4Lo =
        _mm512_setr_epi32(28, 29, 30, 31, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    const __m512i toBit4Hi =
        _mm512_setr_epi32(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27);
    const __m512i bit4 = _mm512_set1_epi32(16);
    const V low = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const V high = _mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    // 0xd8: C ? B : A, bit by bit (A the nibble's bits, B the rotated word, C bit 4).
    const __m512i indexLo =
        _mm512_ternarylogic_epi32(v, _mm512_rorv_epi32(fifth, toBit4Lo), bit4, 0xd8);
    const __m512i indexHi = _mm512_ternarylogic_epi32(
        _mm512_srli_epi32(v, 4), _mm512_rorv_epi32(fifth, toBit4Hi), bit4, 0xd8);
    lo = _mm512_permutex2var_ps(low, indexLo, high);
    hi = _mm512_permutex2var_ps(low, indexHi, high);
  }
  /// Lanes p W to p W + W of two Q5_K sub-blocks 2g and 2g + 1: the 16 bytes of nibbles at
  /// `qs` (as q4) with 16 or'ed in where bit `bit` (lo) or `bit` + 1 (hi) of the matching
  /// byte of the 16 at `qh` is set (p = 0).
  static void q5K(const uint8_t *qs, const uint8_t *qh, int bit, V &lo, V &hi) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qs)));
    // Each fifth bit moved to bit 4: shifted left by 4, then right by its position.
    const __m512i h = _mm512_slli_epi32(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qh))), 4);
    const __m512i sixteen = _mm512_set1_epi32(16);
    // 0xf8: A | (B & C).
    lo = _mm512_cvtepi32_ps(_mm512_ternarylogic_epi32(_mm512_and_si512(v, _mm512_set1_epi32(0x0f)),
                                                      _mm512_srl_epi32(h, _mm_cvtsi32_si128(bit)),
                                                      sixteen, 0xf8));
    hi = _mm512_cvtepi32_ps(_mm512_ternarylogic_epi32(
        _mm512_srli_epi32(v, 4), _mm512_srl_epi32(h, _mm_cvtsi32_si128(bit + 1)), sixteen, 0xf8));
  }
  /// The n <= 16 fp16 values at `p` widened, zeros in lanes n to 15, where the caller guarantees
  /// that 32 bytes can be read at `p` (the scales or minimums of a split row where
  /// scalesLoadWhole holds): one full load whose lanes past n the conversion
  /// zeroes. A masked 16-bit load, or a choice between the two per call, cost more on a Zen 5
  /// (the factored Q4_1 kernel at one fp32 row and 576 columns, widening 4 x 2 per 4 rows:
  /// 45-46 Gweights/s with either, 50-51 with this; nnsc-bench-quant-formats).
  static V widenHalvesInRow(const uint8_t *p, int n) {
    return _mm512_maskz_cvtph_ps(__mmask16((1u << n) - 1),
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  /// widenHalvesInRow into out[0, 16), for the kernel body shared with AVX2 (bytes up to `end`
  /// may be read).
  static void widenHalves(const uint8_t *p, int n, [[maybe_unused]] const uint8_t *end,
                          float *out) {
    assert(end - p >= 32);
    _mm512_store_ps(out, widenHalvesInRow(p, n));
  }
  /// Half h of a Q6_K super-block's quants q (0-63), as bytes in weight order: `first` holds
  /// weights 128 h to 128 h + 63, `second` the next 64. The half's 64 bytes of low bits hold
  /// quants l (low nibbles of bytes l < 32), 32 + l (of bytes 32 + l), 64 + l and 96 + l (their
  /// high nibbles); its 32 bytes of high bits, broadcast to both 256-bit halves, are shifted per
  /// half (4 and 2 bits left for the first 64 quants, 0 and 2 right for the others) so that
  /// each quant's 2 bits land on bits 4-5 of its byte. The 16-bit shifts carry a neighbour
  /// byte's bits in, which the masks drop.
  static void q6KHalf(const uint8_t *block, std::ptrdiff_t h, __m512i &first, __m512i &second) {
    const __m512i nibble = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
    const __m512i leftFirst = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i rightSecond = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i low = _mm512_loadu_si512(block + 64 * h);
    const __m512i high = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(block + 128 + 32 * h)));
    // 0xd8: C ? B : A, bit by bit (A the low bits, B the shifted high bits, C bits 4-5).
    first = _mm512_ternarylogic_epi32(_mm512_and_si512(low, nibble),
                                      _mm512_sllv_epi16(high, leftFirst), bits45, 0xd8);
    second = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(low, 4), nibble),
                                       _mm512_srlv_epi16(high, rightSecond), bits45, 0xd8);
  }
  /// A Q6_K super-block's 16 scales d * sc.
  static __m512 q6KScales(const uint8_t *block) {
    return _mm512_mul_ps(_mm512_set1_ps(half(block + 208)),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                             _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 192)))));
  }
  /// unpackQ6_K in 512-bit registers, 64 quants per operation (q6KHalf, then the offset).
  /// Against the decoder's 32-byte unpack: Q6_K at one fp32 row 21-24 -> 30-33 Gweights/s on a
  /// Zen 5 (nnsc-bench-quant-formats), the Q4_K_M file's down_proj decode phase 16% shorter.
  static void unpackQ6K(const uint8_t *block, int8_t *q, float *scales) {
    _mm512_storeu_ps(scales, q6KScales(block));
    const __m512i offset = _mm512_set1_epi8(32);
    for (std::ptrdiff_t h = 0; h < 2; ++h) {
      __m512i first, second;
      q6KHalf(block, h, first, second);
      _mm512_store_si512(q + 128 * h, _mm512_sub_epi8(first, offset));
      _mm512_store_si512(q + 128 * h + 64, _mm512_sub_epi8(second, offset));
    }
  }
  /// The 16 int8 quants at `q`.
  static V q8(const int8_t *q) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q))));
  }
};

} // namespace
} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVAVX512ISA_H

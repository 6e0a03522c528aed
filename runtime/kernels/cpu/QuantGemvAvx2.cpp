//===- QuantGemvAvx2.cpp - The quantized GEMV on AVX2 + FMA -----*- C++ -*-===//
//
// The library's baseline instruction set (x86-64-v3): 8 fp32 lanes, 16 vector registers, so
// 2 weight rows by 4 activation rows per block of accumulators, or 4 weight rows for a single
// activation row (fastest of the shapes tried on the 2-core Zen 3, docs/Engine.md).
//
//===----------------------------------------------------------------------===//

#include "QuantGemvIsa.h"
#include "QuantGemvKQuantKernel.h"
#include "QuantGemvKernel.h"
#include "QuantGemvWidenedTile.h"
#include "QuantWidenKernel.h"

namespace nnsc::kernels {

namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr int SingleRowBlock = 4;
  static constexpr int RowBlock = 2;
  static constexpr int BatchBlock = 4;
  /// Accumulators of the widened tiles (QuantGemvWidenedTile.h): 4 weight rows by 3 activation
  /// rows, with the 3 activation vectors and a weight vector the 16 registers.
  static constexpr int WidenedRowBlock = 4;
  static constexpr int WidenedBatchBlock = 3;
  /// Activation rows from which a product widens tiles of weight rows into memory: below, the
  /// register widening of exactBlock costs less than the tile's stores and loads (the crossover
  /// measured by nnsc-bench-quant-gemv --row-invariant,
  /// docs/journal/2026-11-29-batch-invariance.md).
  static constexpr int64_t WidenedTileMinRows = 12;

  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V load(const float *p) { return _mm256_loadu_ps(p); }
  static V load(const uint16_t *p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float reduce(V v) { return sum8(v); }
  /// out[i] = the sum of v[i]'s lanes, by horizontal adds of the four vectors together.
  static void reduce4(const V (&v)[4], float (&out)[4]) {
    const V abcd = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }
  static void store(float *p, V v) { _mm256_storeu_ps(p, v); }
  /// Rounded to bf16 as bf16::narrow rounds (to nearest even; a NaN stays a quiet NaN), 8
  /// lanes at a time as Bf16Avx512.h's narrow16 does 16.
  static void store(uint16_t *p, V v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p),
                     _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
  }
  /// The 8 bytes at `qs` widened to 32-bit lanes: their low nibbles as `lo`, high as `hi`.
  static void q4(const uint8_t *qs, V &lo, V &hi) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(qs)));
    lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32(0x0f)));
    hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
  }
  /// The 8 bytes at `qs` as IQ4_NL's: their nibbles' kIQ4NLValues, looked up as bytes by one
  /// vpshufb each, sign-extended and converted.
  static void iq4nl(const uint8_t *qs, V &lo, V &hi) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i *>(kIQ4NLValues));
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(qs));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    auto widen = [&](__m128i indices) {
      return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_shuffle_epi8(table, indices)));
    };
    lo = widen(_mm_and_si128(bytes, nibble));
    hi = widen(_mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
  }
  /// Part p (quants 8 p to 8 p + 7, and 16 more) of a Q5_0/Q5_1 block from its 4 bytes of
  /// fifth bits and 16 bytes of nibbles at `qhThenQs`: the nibbles as in q4, 16 or'ed in where
  /// bit 8 p + l (low) or 16 + 8 p + l (high) is set. The word is broadcast with bit j (low
  /// half) or 16 + j (high) at bit 4 + j, and each lane shifts its own bit to bit 4 (vpsrlvd).
  /// Q5_0 at one fp32 row on a Zen 5 (nnsc-bench-quant-formats, NNSC_QUANT_AVX512=0): 14.5-14.7
  /// Gweights/s, against 12.3 testing each lane's bit with a compare.
  static void q5(const uint8_t *qhThenQs, std::ptrdiff_t p, V &lo, V &hi) {
    uint32_t bits;
    std::memcpy(&bits, qhThenQs, sizeof bits);
    const __m256i v = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(qhThenQs + 4 + 8 * p)));
    const __m256i shift =
        _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(8 * p)));
    const __m256i sixteen = _mm256_set1_epi32(16);
    auto fifth = [&](uint32_t shifted) {
      return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(shifted)), shift), sixteen);
    };
    lo = _mm256_cvtepi32_ps(
        _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0x0f)), fifth(bits << 4)));
    hi = _mm256_cvtepi32_ps(_mm256_or_si256(_mm256_srli_epi32(v, 4), fifth(bits >> 12)));
  }
  /// Lanes p W to p W + W of two Q5_K sub-blocks 2g and 2g + 1: the 8 bytes of nibbles at `qs`
  /// (as q4) with 16 or'ed in where bit `bit` (lo) or `bit` + 1 (hi) of the matching byte of
  /// the 8 at `qh` is set.
  static void q5K(const uint8_t *qs, const uint8_t *qh, int bit, V &lo, V &hi) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(qs)));
    // Each fifth bit moved to bit 4: shifted left by 4, then right by its position.
    const __m256i h = _mm256_slli_epi32(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(qh))), 4);
    const __m256i sixteen = _mm256_set1_epi32(16);
    auto fifth = [&](int b) {
      return _mm256_and_si256(_mm256_srl_epi32(h, _mm_cvtsi32_si128(b)), sixteen);
    };
    lo = _mm256_cvtepi32_ps(
        _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0x0f)), fifth(bit)));
    hi = _mm256_cvtepi32_ps(_mm256_or_si256(_mm256_srli_epi32(v, 4), fifth(bit + 1)));
  }
  /// The n <= 16 fp16 values at `p` widened into out[0, n), zeros in out[n, 16); bytes up to
  /// `end` may be read. Two 16-byte loads where that allows (a copy through the stack first
  /// would stall the loads on store forwarding), one value at a time otherwise.
  static void widenHalves(const uint8_t *p, int n, const uint8_t *end, float *out) {
    if (end - p >= 32) {
      const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      for (std::ptrdiff_t part = 0; part < 2; ++part) {
        const __m256 v =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16 * part)));
        const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * part), lane);
        _mm256_store_ps(out + 8 * part, _mm256_and_ps(v, _mm256_castsi256_ps(keep)));
      }
      return;
    }
    for (std::ptrdiff_t t = 0; t < 16; ++t)
      out[t] = t < n ? half(p + 2 * t) : 0.0f;
  }
  /// Q6_K's quants unpacked 32 at a time, as the decoder does (Dequantize.h).
  static void unpackQ6K(const uint8_t *block, int8_t *q, float *scales) {
    unpackQ6_K(block, q, scales);
  }
  /// The 8 int8 quants at `q`.
  static V q8(const int8_t *q) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(q))));
  }
};

} // namespace

void widenQuantRowsAvx2(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                        int64_t cols, float *out) {
  widenQuantRowsOn<Avx2>(format, w, rowBytes, rows, cols, out);
}

void widenQuantRowsAvx2(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                        int64_t cols, uint16_t *out) {
  widenQuantRowsOn<Avx2>(format, w, rowBytes, rows, cols, out);
}

void quantGemvAvx2(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd) {
  quantGemvProduct<Avx2>(a, rowBegin, rowEnd);
}

void quantGemvAvx2(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  quantGemvProduct<Avx2>(a, rowBegin, rowEnd);
}

} // namespace nnsc::kernels

//===- QuantGemvAvx512Bf16KQuant.cpp - Super-blocks' GEMV on vdpbf16ps -*- C++ -*-===//
//
// Compiled for AVX-512 F/BW/VL and BF16, as QuantGemvAvx512Bf16.cpp, which calls it for bf16
// activations against Q4_K, Q5_K, IQ4_XS or Q6_K blocks (rows as the file stores them,
// 256-weight super-blocks), with the same conversions and bounds (QuantGemvBf16Lanes.h).
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

#include "QuantGemvBf16Lanes.h"
#include "QuantGemvKQuantKernel.h"

namespace nnsc::kernels {

namespace {

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

/// Rows [r, r + RB) of W against activation rows [b, b + BB) laid out in `x`: per super-block
/// the scales (and the second terms, against x's sums of each 32) once per weight row, each
/// pair of sub-blocks converted once for the BB activation rows, which are read as they are
/// (Q4_K, Q5_K) or from x's pairs (IQ4_XS).
template <QuantFormat F, int RB, int BB>
void superBlockRows(const QuantGemvArgs<uint16_t> &a, int64_t r, int64_t b, const Activations *x) {
  constexpr int64_t Bytes = quantBlockBytes(F);
  constexpr bool Codebook = F == QuantFormat::IQ4_XS;
  constexpr float K = F == QuantFormat::Q5_K ? 32.0f : 16.0f;
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
          second[i][j] =
              _mm256_fmadd_ps(factor, _mm256_loadu_ps(x[j].minimumSums + 8 * k), second[i][j]);
      }
    }
    for (std::ptrdiff_t g = 0; g < 4; ++g) {
      __m512bh xlo[BB], xhi[BB];
      for (int j = 0; j < BB; ++j) {
        const uint16_t *xp = Codebook ? x[j].pairs + (4 * k + g) * 64
                                      : a.x + (b + j) * a.xStride + k * kKQuantBlock + 64 * g;
        xlo[j] = (__m512bh)_mm512_loadu_si512(xp);
        xhi[j] = (__m512bh)_mm512_loadu_si512(xp + 32);
      }
      for (int i = 0; i < RB; ++i) {
        __m512i lo, hi;
        if constexpr (Codebook)
          codebookValues(blocks[i] + 8 + 32 * g, true, codebook, lo, hi);
        else if constexpr (F == QuantFormat::Q4_K)
          onePlusSixteenths(blocks[i] + 16 + 32 * g, true, lo, hi);
        else
          q5KThirtySeconds(blocks[i] + 48 + 32 * g, blocks[i] + 16, int(g), lo, hi);
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
      for (std::ptrdiff_t c = 0; c < 2;
           ++c) { // weights 128 h + 64 c on: sub-blocks 8 h + 4 c + 0-3
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

template <QuantFormat F>
void superBlocksOn(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  if constexpr (F == QuantFormat::Q6_K) {
    const Q6KActivations *x = layoutQ6KActivations(a);
    forPairTiles(a, rowBegin, rowEnd, [&](auto rowBlock, auto batchBlock, int64_t r, int64_t b) {
      q6KRows<decltype(rowBlock)::value, decltype(batchBlock)::value>(a, r, b, x + b);
    });
  } else {
    // IQ4_XS's sub-blocks meet the pairs' layout (IQ4_NL's, without second terms); Q4_K and
    // Q5_K read the activations as they are, and Q4_1's layout's minimum sums: sum(x) of each 32.
    const Activations *x = layoutActivations < F == QuantFormat::IQ4_XS ? QuantFormat::IQ4_NL
                                                                        : QuantFormat::Q4_1 > (a);
    forPairTiles(a, rowBegin, rowEnd, [&](auto rowBlock, auto batchBlock, int64_t r, int64_t b) {
      superBlockRows<F, decltype(rowBlock)::value, decltype(batchBlock)::value>(a, r, b, x + b);
    });
  }
}

} // namespace

void quantGemvAvx512Bf16KQuant(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  switch (a.format) {
  case QuantFormat::Q4_K:
    superBlocksOn<QuantFormat::Q4_K>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q5_K:
    superBlocksOn<QuantFormat::Q5_K>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::IQ4_XS:
    superBlocksOn<QuantFormat::IQ4_XS>(a, rowBegin, rowEnd);
    break;
  case QuantFormat::Q6_K:
    superBlocksOn<QuantFormat::Q6_K>(a, rowBegin, rowEnd);
    break;
  default:
    break; // quantGemvAvx512Bf16Applies is false
  }
}

} // namespace nnsc::kernels

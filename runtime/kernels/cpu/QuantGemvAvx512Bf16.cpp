//===- QuantGemvAvx512Bf16.cpp - Block formats' GEMV on vdpbf16ps -*- C++ -*-===//
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
// The super-block formats (Q4_K, Q5_K, IQ4_XS, Q6_K) are in QuantGemvAvx512Bf16KQuant.cpp.
//
//===----------------------------------------------------------------------===//

#include "QuantGemvBf16Lanes.h"
#include "QuantGemvIsa.h"

namespace nnsc::kernels {

namespace {

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
      const __m512 d = Avx512::widenHalvesInRow(Row::scales(row) + 2 * chunk, n);
      const __m512 m = quantHasMinimum(F)
                           ? Avx512::widenHalvesInRow(Row::minimums(row, blocks) + 2 * chunk, n)
                           : d;
      // The chunk's second terms (lanes past the last block are 0 in both factors): the
      // formats with a minimum term in the factored form (QuantGemvKernel.h), which are the
      // ones offset as 1 + q / K here; IQ4_NL meets vdpbf16ps as its values.
      if constexpr (hasMinimumTerm(F))
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
        if constexpr (isQ5(F))
          onePlusThirtySeconds(pair, both, lo, hi);
        else if constexpr (F == QuantFormat::IQ4_NL)
          codebookValues(pair, both, codebook, lo, hi);
        else
          onePlusSixteenths(pair, both, lo, hi);
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

template <QuantFormat F>
void pairRowsOn(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  const Activations *x = layoutActivations<F>(a);
  forPairTiles(a, rowBegin, rowEnd, [&](auto rowBlock, auto batchBlock, int64_t r, int64_t b) {
    pairRows<F, decltype(rowBlock)::value, decltype(batchBlock)::value>(a, r, b, x + b);
  });
}

} // namespace

bool quantGemvAvx512Bf16Applies(const QuantGemvArgs<uint16_t> &a) {
  // pairRows widens a row's scales 32 bytes at a time (Avx512::widenHalvesInRow).
  if (!isKQuant(a.format) && !scalesLoadWhole(a.cols))
    return false;
  return a.format == QuantFormat::Q4_0 || a.format == QuantFormat::Q4_1 ||
         a.format == QuantFormat::Q5_0 || a.format == QuantFormat::Q5_1 ||
         a.format == QuantFormat::IQ4_NL || a.format == QuantFormat::Q4_K ||
         a.format == QuantFormat::Q5_K || a.format == QuantFormat::IQ4_XS ||
         a.format == QuantFormat::Q6_K;
}

void quantGemvAvx512Bf16(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  if (isKQuant(a.format)) {
    quantGemvAvx512Bf16KQuant(a, rowBegin, rowEnd);
    return;
  }
  onBlockFormat(a.format, [&](auto f) {
    if constexpr (decltype(f)::value != QuantFormat::Q8_0) // quantGemvAvx512Bf16Applies: false
      pairRowsOn<decltype(f)::value>(a, rowBegin, rowEnd);
  });
}

} // namespace nnsc::kernels

//===- QuantGemvAvx512Bf16.cpp - 4-bit GEMV on vdpbf16ps --------*- C++ -*-===//
//
// Compiled for AVX-512 F/BW/VL and BF16 (see runtime/CMakeLists.txt); QuantGemv.cpp calls it
// only where the CPU has them (QuantIsa::Avx512Bf16), for one row of bf16 activations against
// Q4_0 or Q4_1 blocks: a bf16 decode step. The generic kernels widen every weight to fp32 and
// convert it from an integer, 8 vector operations per block and row on AVX-512; here a block's
// 32 weights become bf16 without a conversion and meet the bf16 activations in one vdpbf16ps
// each 32, about 4 operations per block and row.
//
// A weight's quant q becomes the bf16 value 1 + q / 16 (exact: four fraction bits of seven):
// q shifted to bits 3-6 of its 16-bit lane, under the exponent of 1.0, in a shift and a
// ternary logic op. vdpbf16ps multiplies bf16 pairs exactly into fp32 and sums them into an
// fp32 lane, so each lane gets S = sum (1 + q / 16) x over its weights, and since
// d q = 16 d (1 + q / 16) - 16 d,
//   sum over a block of (d q + m) x = 16 d S_block + (m - 16 d) sum_block x     (m = -8 d: Q4_0)
// The first term is one FMA per two blocks against their 16 d spread over their lanes; the
// second, like the generic kernel's minimum terms, two vector FMAs per 16 blocks against the
// blocks' sums of x (fp32, from the exact widening of x). The result is the fp32 sum of the
// products of the activations with the file's dequantized weights, rounded differently:
// within gamma_n * sum (|d q| + |m| + 32 |d|) |x| (vdpbf16ps flushes denormal inputs and
// outputs to zero, which moves a result by less than 2^-126 per product), then rounded once to
// bf16.
//
//===----------------------------------------------------------------------===//

#include "QuantGemvIsa.h"
#include "QuantGemvKernel.h"

namespace nnsc::kernels {

namespace {

constexpr int PairBlocks = 2; // blocks per vdpbf16ps pair of registers

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

/// The activation row laid out for the pairs, per thread, reused: per two blocks, the bf16
/// activations of weights 0-15 of both blocks (32 lanes), then of weights 16-31 (zero past the
/// last block); then per block sum(x) times the factor of d in the second term (-16, or -24
/// as -16 and -8 for Q4_0) and times the factor of m (Q4_1), padded to 16 blocks.
struct Activations {
  const uint16_t *pairs;
  const float *scaleSums, *minimumSums;
};

template <QuantFormat F> Activations layoutActivations(const uint16_t *x, int64_t blocks) {
  thread_local std::vector<uint16_t> pairs;
  thread_local std::vector<float> sums;
  const int64_t padded = (blocks + 15) / 16 * 16;
  pairs.assign(size_t((blocks + 1) / 2 * 64), 0);
  sums.assign(size_t(2 * padded), 0.0f);
  float *scaleSums = sums.data(), *minimumSums = scaleSums + padded;
  for (int64_t k = 0; k < blocks; ++k) {
    uint16_t *group = pairs.data() + (k / 2) * 64 + (k % 2) * 16;
    std::memcpy(group, x + k * 32, 16 * sizeof(uint16_t));
    std::memcpy(group + 32, x + k * 32 + 16, 16 * sizeof(uint16_t));
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + k * 32)));
    const __m512i wide2 = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + k * 32 + 16)));
    const float sum =
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)),
                                           _mm512_castsi512_ps(_mm512_slli_epi32(wide2, 16))));
    scaleSums[k] = -16.0f * sum; // exact
    minimumSums[k] = F == QuantFormat::Q4_0 ? -8.0f * sum : sum;
  }
  return {pairs.data(), scaleSums, minimumSums};
}

/// The n <= 16 fp16 values at `p` widened into 16 lanes, zeros past them (nothing past them is
/// read).
inline __m512 widenHalves(const uint8_t *p, int n) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p));
}

/// Rows [r, r + RB) of W against the one activation row laid out in `x`.
template <QuantFormat F, int RB>
void pairRows(const QuantGemvArgs<uint16_t> &a, int64_t r, const Activations &x) {
  using Row = SplitRow<F>;
  constexpr int64_t Bytes = quantBlockBytes(F);
  const uint8_t *w = a.w + r * a.rowBytes;
  const int64_t blocks = a.cols / BlockWeights;
  const uint8_t *qs = Row::quants(w, blocks);
  __m512 acc[RB];
  for (int i = 0; i < RB; ++i)
    acc[i] = _mm512_setzero_ps();
  for (int64_t chunk = 0; chunk < blocks; chunk += 16) {
    const int n = int(std::min<int64_t>(16, blocks - chunk));
    __m512 d16[RB];
    for (int i = 0; i < RB; ++i) {
      const uint8_t *row = w + i * a.rowBytes;
      const __m512 d = widenHalves(Row::scales(row) + 2 * chunk, n);
      // The chunk's second terms (lanes past the last block are 0 in both factors).
      acc[i] = _mm512_fmadd_ps(d, _mm512_loadu_ps(x.scaleSums + chunk), acc[i]);
      const __m512 m =
          F == QuantFormat::Q4_1 ? widenHalves(Row::minimums(row, blocks) + 2 * chunk, n) : d;
      acc[i] = _mm512_fmadd_ps(m, _mm512_loadu_ps(x.minimumSums + chunk), acc[i]);
      d16[i] = _mm512_mul_ps(d, _mm512_set1_ps(16.0f)); // exact
    }
    for (int g = 0; g * PairBlocks < n; ++g) {
      const int64_t k = chunk + int64_t(g) * PairBlocks; // the pair's first block
      const bool both = g * PairBlocks + 1 < n;
      for (int b = 0; b < (both ? 2 : 1); ++b) // the next rows stream in, as in QuantGemvKernel.h
        prefetchNextGroup<RB, Bytes>(w, a.rowBytes, k + b);
      const uint16_t *xp = x.pairs + (k / 2) * 64;
      const __m512bh xlo = (__m512bh)_mm512_loadu_si512(xp);
      const __m512bh xhi = (__m512bh)_mm512_loadu_si512(xp + 32);
      // Lanes 0-7 belong to block k, lanes 8-15 to block k + 1.
      const __m512i spread = _mm512_set_epi32(2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1,
                                              2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g, 2 * g, 2 * g,
                                              2 * g, 2 * g, 2 * g, 2 * g, 2 * g);
      const __mmask32 valid = both ? ~__mmask32(0) : __mmask32(0xffff);
      for (int i = 0; i < RB; ++i) {
        __m512i lo, hi;
        onePlusSixteenths(qs + i * a.rowBytes + k * 16, valid, lo, hi);
        __m512 s = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)lo, xlo);
        s = _mm512_dpbf16_ps(s, (__m512bh)hi, xhi);
        acc[i] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread, d16[i]), s, acc[i]);
      }
    }
  }
  for (int i = 0; i < RB; ++i) {
    const float bias = a.bias ? widen(a.bias[r + i]) : 0.0f;
    uint16_t *out = a.y + r + i;
    const float v = _mm512_reduce_add_ps(acc[i]) + bias;
    store(out, a.accumulate ? widen(*out) + v : v);
  }
}

template <QuantFormat F>
void pairRowsOn(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  constexpr int RB = 4;
  const Activations x = layoutActivations<F>(a.x, a.cols / BlockWeights);
  int64_t r = rowBegin;
  for (; r + RB <= rowEnd; r += RB)
    pairRows<F, RB>(a, r, x);
  for (; r < rowEnd; ++r)
    pairRows<F, 1>(a, r, x);
}

} // namespace

bool quantGemvAvx512Bf16Applies(const QuantGemvArgs<uint16_t> &a) {
  return a.batch == 1 && (a.format == QuantFormat::Q4_0 || a.format == QuantFormat::Q4_1);
}

void quantGemvAvx512Bf16(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  if (a.format == QuantFormat::Q4_0)
    pairRowsOn<QuantFormat::Q4_0>(a, rowBegin, rowEnd);
  else
    pairRowsOn<QuantFormat::Q4_1>(a, rowBegin, rowEnd);
}

} // namespace nnsc::kernels

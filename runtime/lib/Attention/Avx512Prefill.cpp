//===- Avx512Prefill.cpp - Prefill paged attention, AVX-512 -----*- C++ -*-===//
//
// A prefill tile has 16 * group query rows (16 queries times the query heads of one KV
// head), so the vector lanes hold 16 rows: queries and accumulators are kept transposed,
// [head_dim][16 rows]. Then the scores of 16 rows against one key are head_dim FMAs with the
// key's elements broadcast, the online softmax is plain lane-wise arithmetic (a row's
// running maximum and denominator are lanes too), and the value update is again broadcast
// FMAs. Keys are read 16 positions at a time, transposed into a [head_dim][16] buffer so
// each broadcast is at a fixed offset; value rows are used in place (float32) or widened
// once into a buffer (bfloat16).
//
// bfloat16 scores are vdpbf16ps products where the CPU has AVX512-BF16 (Operands::bf16Dot)
// and head_dim is 32, 64 or 128, as in the decode kernel: the queries, unscaled, are kept
// as bf16 pairs transposed, [head_dim / 2][16 rows] of 32-bit lanes, and each key's pair of
// elements is broadcast straight from a copy of its row, so a pair of dimensions is one
// instruction instead of two FMAs and the keys need no transpose. Exact products summed in
// fp32, as widening gives them, in another order; the scale multiplies the sums. The
// probability-weighted values are vdpbf16ps products too: each row's probabilities of two
// keys rounded to a bf16 pair (as LibTorch's bf16 attention rounds them for its P V product;
// the denominators sum them unrounded, as it does) against the two keys' values of a
// dimension, interleaved into pairs once per 16 keys.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "Avx512Math.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

namespace nnsc::attention {

namespace {

/// Per-thread buffers, grown to the largest tile seen and reused across calls. With the bf16
/// dot product `queries` holds bf16 pairs and `keys` the 16 keys' bf16 rows, as their bits.
struct PrefillScratch {
  std::vector<float> queries, acc, maxScore, denom, keys, values, probs, zeros;
  std::vector<int32_t> positions;

  void reserve(int64_t rowVectors, int64_t dim) {
    auto grow = [](auto &v, size_t n) {
      if (v.size() < n)
        v.resize(n);
    };
    grow(queries, size_t(rowVectors * dim * 16));
    grow(acc, size_t(rowVectors * dim * 16));
    grow(maxScore, size_t(rowVectors * 16));
    grow(denom, size_t(rowVectors * 16));
    grow(positions, size_t(rowVectors * 16));
    grow(keys, size_t(dim * 16));
    grow(values, size_t(dim * 16));
    grow(probs, 16 * 16);
    if (zeros.size() < size_t(dim))
      zeros.assign(size_t(dim), 0.f);
  }
};

PrefillScratch &scratch() {
  thread_local PrefillScratch s;
  return s;
}

/// Scores of 16 rows (queries transposed, [dim][16]) against 16 keys ([dim][16]).
void scoreRows(const float *queries, const float *keys, int64_t dim, __m512 (&scores)[16]) {
  for (int t = 0; t < 16; ++t)
    scores[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < dim; ++i) {
    const __m512 q = _mm512_loadu_ps(queries + i * 16);
    const float *k = keys + i * 16;
    for (int t = 0; t < 16; ++t)
      scores[t] = _mm512_fmadd_ps(q, _mm512_set1_ps(k[t]), scores[t]);
  }
}

/// Scores of 16 rows (bf16 query pairs transposed, [Pairs][16] 32-bit lanes) against 16 keys
/// (their bf16 rows, Pairs 32-bit pairs each) with vdpbf16ps, each key's pair an embedded
/// broadcast at a fixed offset. Compiled for AVX512-BF16 only here; Operands::bf16Dot says
/// the CPU has it.
template <int64_t Pairs>
__attribute__((target("avx512bf16"))) void
scoreRowsBf16Dot(const uint32_t *queryPairs, const uint32_t *keyPairs, __m512 (&scores)[16]) {
  __m512 acc[16];
  for (int t = 0; t < 16; ++t)
    acc[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < Pairs; ++i) {
    const __m512bh q = (__m512bh)_mm512_loadu_si512(queryPairs + i * 16);
    for (int t = 0; t < 16; ++t)
      acc[t] = _mm512_dpbf16_ps(acc[t], q,
                                (__m512bh)_mm512_set1_epi32(int32_t(keyPairs[t * Pairs + i])));
  }
  for (int t = 0; t < 16; ++t)
    scores[t] = acc[t];
}

/// scoreRowsBf16Dot for the head_dims of 32-128 (`pairs` = head_dim / 2): false for others,
/// which take the widening path.
bool bf16DotApplies(int64_t pairs) { return pairs == 16 || pairs == 32 || pairs == 64; }
void scoreRowsBf16Dot(const uint32_t *queryPairs, const uint32_t *keyPairs, int64_t pairs,
                      __m512 (&scores)[16]) {
  if (pairs == 16)
    scoreRowsBf16Dot<16>(queryPairs, keyPairs, scores);
  else if (pairs == 32)
    scoreRowsBf16Dot<32>(queryPairs, keyPairs, scores);
  else
    scoreRowsBf16Dot<64>(queryPairs, keyPairs, scores);
}

/// The 16-bit indices 0, second, 1, second + 1, ..., 15, second + 15: a permutation that
/// interleaves words 0-15 with words second to second + 15 into 32-bit pairs.
inline __m512i interleavedWords(int16_t second) {
  alignas(64) int16_t index[32];
  for (int16_t i = 0; i < 16; ++i) {
    index[2 * i] = i;
    index[2 * i + 1] = int16_t(second + i);
  }
  return _mm512_load_si512(index);
}

/// The bf16 value rows of 16 keys (null past the last: zeros) as pairs over keys 2u, 2u + 1:
/// out[u * dim + j] holds the values of dimension j of both, for u < 8.
void pairValues(const uint16_t *const (&values)[16], int64_t dim, uint32_t *out) {
  const __m512i low = interleavedWords(32);
  const __m512i high = _mm512_add_epi16(low, _mm512_set1_epi16(16));
  for (int u = 0; u < 8; ++u) {
    const uint16_t *a = values[2 * u], *b = values[2 * u + 1];
    for (int64_t c = 0; c < dim; c += 32) {
      const __m512i va = a ? _mm512_loadu_si512(a + c) : _mm512_setzero_si512();
      const __m512i vb = b ? _mm512_loadu_si512(b + c) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + u * dim + c, _mm512_permutex2var_epi16(va, low, vb));
      _mm512_storeu_si512(out + u * dim + c + 16, _mm512_permutex2var_epi16(va, high, vb));
    }
  }
}

/// acc = acc * correction + sum_t probs[t] * values[t] for 16 rows, acc transposed
/// ([Dim][16]), with vdpbf16ps: the n probabilities (fp32, [16 keys][16 rows], zeros past n)
/// rounded to bf16 pairs over keys, against pairValues' pairs.
template <int64_t Dim>
__attribute__((target("avx512bf16"))) void
accumulateValuesBf16Dot(float *acc, __m512 correction, const float *probs,
                        const uint32_t *valuePairs, int n) {
  const __m512i interleave = interleavedWords(16);
  const int keyPairs = (n + 1) / 2;
  __m512bh p[8];
  for (int u = 0; u < keyPairs; ++u)
    p[u] = (__m512bh)_mm512_permutexvar_epi16(
        interleave, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(probs + (2 * u + 1) * 16),
                                                 _mm512_loadu_ps(probs + 2 * u * 16)));
  for (int64_t i0 = 0; i0 < Dim; i0 += 16) {
    __m512 a[16];
    for (int j = 0; j < 16; ++j)
      a[j] = _mm512_mul_ps(_mm512_loadu_ps(acc + (i0 + j) * 16), correction);
    for (int u = 0; u < keyPairs; ++u) {
      const uint32_t *v = valuePairs + u * Dim + i0;
      for (int j = 0; j < 16; ++j)
        a[j] = _mm512_dpbf16_ps(a[j], p[u], (__m512bh)_mm512_set1_epi32(int32_t(v[j])));
    }
    for (int j = 0; j < 16; ++j)
      _mm512_storeu_ps(acc + (i0 + j) * 16, a[j]);
  }
}

void accumulateValuesBf16Dot(float *acc, __m512 correction, const float *probs,
                             const uint32_t *valuePairs, int n, int64_t dim) {
  if (dim == 32)
    accumulateValuesBf16Dot<32>(acc, correction, probs, valuePairs, n);
  else if (dim == 64)
    accumulateValuesBf16Dot<64>(acc, correction, probs, valuePairs, n);
  else
    accumulateValuesBf16Dot<128>(acc, correction, probs, valuePairs, n);
}

/// acc = acc * correction + sum_t probs[t] * values[t] for 16 rows, acc transposed
/// ([dim][16]), 16 dims at a time.
void accumulateValues(float *acc, __m512 correction, const float *probs,
                      const float *const (&values)[16], int n, int64_t dim) {
  for (int64_t i0 = 0; i0 < dim; i0 += 16) {
    __m512 a[16];
    for (int j = 0; j < 16; ++j)
      a[j] = _mm512_mul_ps(_mm512_loadu_ps(acc + (i0 + j) * 16), correction);
    for (int t = 0; t < n; ++t) {
      const __m512 p = _mm512_loadu_ps(probs + t * 16);
      const float *v = values[t] + i0;
      for (int j = 0; j < 16; ++j)
        a[j] = _mm512_fmadd_ps(p, _mm512_set1_ps(v[j]), a[j]);
    }
    for (int j = 0; j < 16; ++j)
      _mm512_storeu_ps(acc + (i0 + j) * 16, a[j]);
  }
}

template <typename T> void prefillTile(const Operands<T> &ops, const Tile &tile, int64_t kvHead) {
  const Dims &d = ops.dims;
  const int64_t dim = d.headDim;
  const int64_t group = d.group();
  const int64_t rows = tile.numQueries * group;
  const int64_t rowVectors = (rows + 15) / 16;
  const int64_t tokenStride = d.numKvHeads * dim;
  const int64_t pairs = dim / 2;
  const bool bf16Dot = std::is_same_v<T, uint16_t> && ops.bf16Dot && bf16DotApplies(pairs);
  PrefillScratch &s = scratch();
  s.reserve(rowVectors, dim);
  auto *queryPairs = reinterpret_cast<uint32_t *>(s.queries.data());
  auto *keyRows = reinterpret_cast<T *>(s.keys.data());             // [16][dim] with the bf16 dot
  auto *valuePairs = reinterpret_cast<uint32_t *>(s.values.data()); // [8][dim], likewise

  // Row r is query r / group, head kvHead * group + r % group; lanes past the last row have
  // position -1, which sees no key.
  auto rowOffset = [&](int64_t r) {
    return ((tile.firstRow + r / group) * d.numHeads + kvHead * group + r % group) * dim;
  };
  const __m512 scale = _mm512_set1_ps(ops.scale);
  for (int64_t rv = 0; rv < rowVectors; ++rv) {
    const T *src[16];
    for (int j = 0; j < 16; ++j) {
      const int64_t r = rv * 16 + j;
      src[j] = r < rows ? ops.q + rowOffset(r) : nullptr;
      s.positions[r] = r < rows ? int32_t(tile.firstPos + r / group) : -1;
    }
    if (bf16Dot) { // 16 pairs (32 elements) of each row per transpose, as 32-bit lanes
      for (int64_t i0 = 0; i0 < dim; i0 += 32) {
        __m512 in[16], out[16];
        for (int j = 0; j < 16; ++j)
          in[j] = src[j] ? _mm512_loadu_ps(src[j] + i0) : _mm512_setzero_ps();
        transpose16(in, out);
        for (int j = 0; j < 16; ++j)
          _mm512_storeu_ps(queryPairs + (rv * pairs + i0 / 2 + j) * 16, out[j]);
      }
      continue;
    }
    for (int64_t i0 = 0; i0 < dim; i0 += 16) {
      __m512 in[16], out[16];
      for (int j = 0; j < 16; ++j)
        in[j] = src[j] ? _mm512_mul_ps(load16(src[j] + i0), scale) : _mm512_setzero_ps();
      transpose16(in, out);
      for (int j = 0; j < 16; ++j)
        _mm512_storeu_ps(s.queries.data() + (rv * dim + i0 + j) * 16, out[j]);
    }
  }
  std::fill_n(s.acc.begin(), rowVectors * dim * 16, 0.f);
  std::fill_n(s.maxScore.begin(), rowVectors * 16, -std::numeric_limits<float>::infinity());
  std::fill_n(s.denom.begin(), rowVectors * 16, 0.f);

  const int64_t numKeys = tile.firstPos + tile.numQueries;
  for (int64_t first = 0; first < numKeys; first += 16) {
    const int n = int(std::min<int64_t>(16, numKeys - first));
    const T *keys[16];
    const float *values[16];
    const T *valueRows[16]; // with the bf16 dot
    int64_t slots[16];
    slotsOf(tile, d.blockSize, first, n, slots);
    for (int t = 0; t < n; ++t) {
      keys[t] = ops.kCache + slots[t] * tokenStride + kvHead * dim;
      const T *value = ops.vCache + slots[t] * tokenStride + kvHead * dim;
      if constexpr (std::is_same_v<T, float>) {
        values[t] = value;
      } else if (bf16Dot) {
        valueRows[t] = value;
      } else {
        float *widened = s.values.data() + t * dim;
        for (int64_t i = 0; i < dim; i += 16)
          _mm512_storeu_ps(widened + i, load16(value + i));
        values[t] = widened;
      }
    }
    for (int t = n; t < 16; ++t) {
      values[t] = s.zeros.data();
      valueRows[t] = nullptr;
    }
    if (bf16Dot) {
      if constexpr (std::is_same_v<T, uint16_t>) {
        pairValues(valueRows, dim, valuePairs);
        for (int t = 0; t < 16; ++t)
          if (t < n)
            std::copy_n(keys[t], dim, keyRows + t * dim);
          else
            std::fill_n(keyRows + t * dim, dim, T(0));
      }
    } else {
      for (int64_t i0 = 0; i0 < dim; i0 += 16) {
        __m512 in[16], out[16];
        for (int t = 0; t < 16; ++t)
          in[t] = t < n ? load16(keys[t] + i0) : _mm512_setzero_ps();
        transpose16(in, out);
        for (int j = 0; j < 16; ++j)
          _mm512_storeu_ps(s.keys.data() + (i0 + j) * 16, out[j]);
      }
    }

    for (int64_t rv = 0; rv < rowVectors; ++rv) {
      // Causal: the tile's rows are in position order, so a vector whose last row precedes
      // the keys has nothing to see.
      const int64_t lastRow = std::min(rows, (rv + 1) * 16) - 1;
      if (first > tile.firstPos + lastRow / group)
        continue;
      __m512 scores[16];
      if (bf16Dot) {
        scoreRowsBf16Dot(queryPairs + rv * pairs * 16, reinterpret_cast<const uint32_t *>(keyRows),
                         pairs, scores);
        for (int t = 0; t < 16; ++t)
          scores[t] = _mm512_mul_ps(scores[t], scale);
      } else {
        scoreRows(s.queries.data() + rv * dim * 16, s.keys.data(), dim, scores);
      }
      const __m512i positions = _mm512_loadu_si512(s.positions.data() + rv * 16);
      __mmask16 visible[16];
      const __m512 old = _mm512_loadu_ps(s.maxScore.data() + rv * 16);
      __m512 top = old;
      for (int t = 0; t < n; ++t) {
        visible[t] =
            _mm512_cmp_epi32_mask(_mm512_set1_epi32(int32_t(first + t)), positions, _MM_CMPINT_LE);
        top = _mm512_mask_max_ps(top, visible[t], top, scores[t]);
      }
      // Rows that have seen no key yet keep -inf; their correction is irrelevant (their sums
      // are 0) but must not be NaN.
      const __mmask16 seen = _mm512_cmp_ps_mask(
          top, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), _CMP_NEQ_OQ);
      const __m512 correction =
          _mm512_mask_blend_ps(seen, _mm512_set1_ps(1.f), exp512(_mm512_sub_ps(old, top)));
      __m512 denom = _mm512_mul_ps(_mm512_loadu_ps(s.denom.data() + rv * 16), correction);
      for (int t = 0; t < n; ++t) {
        const __m512 p = _mm512_maskz_mov_ps(visible[t], exp512(_mm512_sub_ps(scores[t], top)));
        denom = _mm512_add_ps(denom, p);
        _mm512_storeu_ps(s.probs.data() + t * 16, p);
      }
      _mm512_storeu_ps(s.denom.data() + rv * 16, denom);
      _mm512_storeu_ps(s.maxScore.data() + rv * 16, top);
      if (bf16Dot) {
        if (n % 2)
          _mm512_storeu_ps(s.probs.data() + n * 16, _mm512_setzero_ps());
        accumulateValuesBf16Dot(s.acc.data() + rv * dim * 16, correction, s.probs.data(),
                                valuePairs, n, dim);
      } else {
        accumulateValues(s.acc.data() + rv * dim * 16, correction, s.probs.data(), values, n, dim);
      }
    }
  }

  // Normalize lane-wise, then transpose back to rows.
  for (int64_t rv = 0; rv < rowVectors; ++rv) {
    const __m512 inv =
        _mm512_div_ps(_mm512_set1_ps(1.f), _mm512_loadu_ps(s.denom.data() + rv * 16));
    const int64_t valid = std::min<int64_t>(16, rows - rv * 16);
    for (int64_t i0 = 0; i0 < dim; i0 += 16) {
      __m512 in[16], out[16];
      for (int j = 0; j < 16; ++j)
        in[j] = _mm512_mul_ps(_mm512_loadu_ps(s.acc.data() + (rv * dim + i0 + j) * 16), inv);
      transpose16(in, out);
      for (int64_t j = 0; j < valid; ++j)
        store16(ops.out + rowOffset(rv * 16 + j) + i0, out[j]);
    }
  }
}

} // namespace

void prefillTileAvx512(const Operands<float> &ops, const Tile &tile, int64_t kvHead) {
  prefillTile(ops, tile, kvHead);
}
void prefillTileAvx512(const Operands<uint16_t> &ops, const Tile &tile, int64_t kvHead) {
  prefillTile(ops, tile, kvHead);
}

} // namespace nnsc::attention

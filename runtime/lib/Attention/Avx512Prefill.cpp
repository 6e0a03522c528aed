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
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "Avx512Math.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

namespace nnsc::attention {

namespace {

/// Per-thread buffers, grown to the largest tile seen and reused across calls.
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
  PrefillScratch &s = scratch();
  s.reserve(rowVectors, dim);

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
    int64_t slots[16];
    slotsOf(tile, d.blockSize, first, n, slots);
    for (int t = 0; t < n; ++t) {
      keys[t] = ops.kCache + slots[t] * tokenStride + kvHead * dim;
      const T *value = ops.vCache + slots[t] * tokenStride + kvHead * dim;
      if constexpr (std::is_same_v<T, float>) {
        values[t] = value;
      } else {
        float *widened = s.values.data() + t * dim;
        for (int64_t i = 0; i < dim; i += 16)
          _mm512_storeu_ps(widened + i, load16(value + i));
        values[t] = widened;
      }
    }
    for (int t = n; t < 16; ++t)
      values[t] = s.zeros.data();
    for (int64_t i0 = 0; i0 < dim; i0 += 16) {
      __m512 in[16], out[16];
      for (int t = 0; t < 16; ++t)
        in[t] = t < n ? load16(keys[t] + i0) : _mm512_setzero_ps();
      transpose16(in, out);
      for (int j = 0; j < 16; ++j)
        _mm512_storeu_ps(s.keys.data() + (i0 + j) * 16, out[j]);
    }

    for (int64_t rv = 0; rv < rowVectors; ++rv) {
      // Causal: the tile's rows are in position order, so a vector whose last row precedes
      // the keys has nothing to see.
      const int64_t lastRow = std::min(rows, (rv + 1) * 16) - 1;
      if (first > tile.firstPos + lastRow / group)
        continue;
      __m512 scores[16];
      scoreRows(s.queries.data() + rv * dim * 16, s.keys.data(), dim, scores);
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
      accumulateValues(s.acc.data() + rv * dim * 16, correction, s.probs.data(), values, n, dim);
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

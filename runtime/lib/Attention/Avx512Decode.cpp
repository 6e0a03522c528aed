//===- Avx512Decode.cpp - One-query paged attention, AVX-512 ----*- C++ -*-===//
//
// A decoding sequence has one query row per head, too few to fill vector lanes with rows, so
// the lanes hold 16 consecutive keys: each head's dot products with 16 keys are 16 vector
// FMA chains over head_dim, summed across lanes together by one transpose-and-add tree. The
// item is the whole sequence: 16 positions at a time, every KV head in turn, so a block's
// K/V (all KV heads side by side in the cache) is streamed from memory once, in order.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "Avx512Math.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnsc::attention {

namespace {

/// Per-thread buffers, grown to the largest shape seen and reused across calls.
template <typename T> struct DecodeScratch {
  std::vector<float> query, acc, maxScore, denom, probs, corrections;
  std::vector<float> keyRows; // [16, head_dim], one KV head's keys widened from bfloat16
  std::vector<T> zeros;       // stands in for the rows past the sequence's end, one token wide

  void reserve(const Dims &d) {
    const auto heads = size_t(d.numHeads), dim = size_t(d.headDim);
    for (std::vector<float> *v : {&query, &acc})
      if (v->size() < heads * dim)
        v->resize(heads * dim);
    for (std::vector<float> *v : {&maxScore, &denom, &corrections})
      if (v->size() < heads)
        v->resize(heads);
    if (probs.size() < heads * 16)
      probs.resize(heads * 16);
    if (keyRows.size() < 16 * dim)
      keyRows.resize(16 * dim);
    if (zeros.size() < size_t(d.numKvHeads) * dim)
      zeros.assign(size_t(d.numKvHeads) * dim, T{});
  }
};

template <typename T> DecodeScratch<T> &scratch() {
  thread_local DecodeScratch<T> s;
  return s;
}

/// Calls f(std::integral_constant<int, n>) for the n in [1, Max] equal to `n`.
template <int Max, int N = 1, typename F> void withCount(int n, F &&f) {
  if constexpr (N < Max) {
    if (n != N)
      return withCount<Max, N + 1>(n, std::forward<F>(f));
  }
  f(std::integral_constant<int, N>{});
}

/// The scores of one head's query (pre-scaled, float) against 16 key rows.
template <int NV> __m512 scoreKeys(const float *query, const float *const (&keys)[16]) {
  __m512 q[NV];
  for (int c = 0; c < NV; ++c)
    q[c] = _mm512_loadu_ps(query + 16 * c);
  __m512 dots[16];
  for (int t = 0; t < 16; ++t) {
    const float *key = keys[t];
    __m512 a = _mm512_mul_ps(q[0], load16(key));
    for (int c = 1; c < NV; ++c)
      a = _mm512_fmadd_ps(q[c], load16(key + 16 * c), a);
    dots[t] = a;
  }
  return transposeSum16(dots);
}

/// acc[g] = acc[g] * corrections[g] + sum_t probs[g][t] * values[t] for GS heads whose
/// accumulator rows ([GS, 16 * NV]) and probabilities ([GS, 16]) are packed.
template <int GS, int NV, typename T>
void accumulateValues(const T *const (&values)[16], int64_t offset, int n, const float *probs,
                      const float *corrections, float *acc) {
  __m512 a[GS][NV];
  for (int g = 0; g < GS; ++g)
    for (int c = 0; c < NV; ++c)
      a[g][c] =
          _mm512_mul_ps(_mm512_loadu_ps(acc + (g * NV + c) * 16), _mm512_set1_ps(corrections[g]));
  for (int t = 0; t < n; ++t) {
    const T *value = values[t] + offset;
    for (int c = 0; c < NV; ++c) {
      const __m512 v = load16(value + 16 * c);
      for (int g = 0; g < GS; ++g)
        a[g][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[g * 16 + t]), v, a[g][c]);
    }
  }
  for (int g = 0; g < GS; ++g)
    for (int c = 0; c < NV; ++c)
      _mm512_storeu_ps(acc + (g * NV + c) * 16, a[g][c]);
}

template <typename T, int NV> void decodeTile(const Operands<T> &ops, const Tile &tile) {
  constexpr int64_t Dim = 16 * NV;
  // Heads whose value accumulators are held in registers at once: at most 16 vectors.
  constexpr int MaxHeadSet = NV >= 16 ? 1 : 16 / NV;
  const Dims &d = ops.dims;
  const int64_t group = d.group();
  const int64_t tokenStride = d.numKvHeads * Dim;
  DecodeScratch<T> &s = scratch<T>();
  s.reserve(d);

  const T *q = ops.q + tile.firstRow * d.numHeads * Dim;
  for (int64_t i = 0; i < d.numHeads * Dim; i += 16)
    _mm512_storeu_ps(s.query.data() + i, _mm512_mul_ps(load16(q + i), _mm512_set1_ps(ops.scale)));
  std::fill_n(s.acc.begin(), d.numHeads * Dim, 0.f);
  std::fill_n(s.maxScore.begin(), d.numHeads, -std::numeric_limits<float>::infinity());
  std::fill_n(s.denom.begin(), d.numHeads, 0.f);

  const int64_t numKeys = tile.firstPos + 1;
  for (int64_t first = 0; first < numKeys; first += 16) {
    const int n = int(std::min<int64_t>(16, numKeys - first));
    // Rows of the 16 positions, at KV head 0; past the end, zeros.
    const T *keys[16], *values[16];
    int64_t slots[16];
    slotsOf(tile, d.blockSize, first, n, slots);
    __mmask16 valid = __mmask16((1u << n) - 1);
    if (ops.absent)
      for (int t = 0; t < n; ++t)
        if (ops.absent[slots[t]])
          valid &= __mmask16(~(1u << t));
    for (int t = 0; t < 16; ++t) {
      if (t < n) {
        keys[t] = ops.kCache + slots[t] * tokenStride;
        values[t] = ops.vCache + slots[t] * tokenStride;
      } else {
        keys[t] = values[t] = s.zeros.data();
      }
    }
    for (int64_t kvHead = 0; kvHead < d.numKvHeads; ++kvHead) {
      const int64_t offset = kvHead * Dim;
      const int64_t firstHead = kvHead * group;
      // Every head of the group reads the keys: widen bfloat16 ones once.
      const float *keyRows[16];
      for (int t = 0; t < 16; ++t) {
        if constexpr (std::is_same_v<T, float>) {
          keyRows[t] = keys[t] + offset;
        } else {
          float *widened = s.keyRows.data() + t * Dim;
          for (int c = 0; c < NV; ++c)
            _mm512_storeu_ps(widened + 16 * c, load16(keys[t] + offset + 16 * c));
          keyRows[t] = widened;
        }
      }
      for (int64_t g = 0; g < group; ++g) {
        const int64_t head = firstHead + g;
        const __m512 scores = scoreKeys<NV>(s.query.data() + head * Dim, keyRows);
        // Online softmax: the running maximum over the keys seen so far, with what the
        // earlier keys accumulated rescaled to it.
        const float old = s.maxScore[head];
        const float top = std::max(old, _mm512_mask_reduce_max_ps(valid, scores));
        if (top == -std::numeric_limits<float>::infinity()) {
          // No key seen yet (all absent so far): nothing to add or rescale.
          s.corrections[g] = 1.f;
          _mm512_storeu_ps(s.probs.data() + g * 16, _mm512_setzero_ps());
          continue;
        }
        const __m512 p =
            _mm512_maskz_mov_ps(valid, exp512(_mm512_sub_ps(scores, _mm512_set1_ps(top))));
        // The vector exp on one lane: a libm call here would spill every live vector
        // register around it.
        s.corrections[g] = _mm512_cvtss_f32(exp512(_mm512_set1_ps(old - top)));
        s.denom[head] = s.denom[head] * s.corrections[g] + _mm512_reduce_add_ps(p);
        s.maxScore[head] = top;
        _mm512_storeu_ps(s.probs.data() + g * 16, p);
      }
      for (int64_t g0 = 0; g0 < group; g0 += MaxHeadSet)
        withCount<MaxHeadSet>(int(std::min<int64_t>(MaxHeadSet, group - g0)), [&](auto gs) {
          accumulateValues<decltype(gs)::value, NV>(values, offset, n, s.probs.data() + g0 * 16,
                                                    s.corrections.data() + g0,
                                                    s.acc.data() + (firstHead + g0) * Dim);
        });
    }
  }

  T *out = ops.out + tile.firstRow * d.numHeads * Dim;
  for (int64_t head = 0; head < d.numHeads; ++head) {
    // A query that sees no key at all (all absent) gets zeros.
    const __m512 inv = _mm512_set1_ps(s.denom[head] > 0.f ? 1.f / s.denom[head] : 0.f);
    for (int64_t i = head * Dim; i < (head + 1) * Dim; i += 16)
      store16(out + i, _mm512_mul_ps(_mm512_loadu_ps(s.acc.data() + i), inv));
  }
}

template <typename T> void decodeAnyDim(const Operands<T> &ops, const Tile &tile) {
  withCount<16>(int(ops.dims.headDim / 16), [&](auto nv) { decodeTile<T, nv()>(ops, tile); });
}

} // namespace

bool avx512Usable(int64_t headDim) {
  return headDim % 16 == 0 && headDim > 0 && headDim <= 256 && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

void decodeTileAvx512(const Operands<float> &ops, const Tile &tile) { decodeAnyDim(ops, tile); }
void decodeTileAvx512(const Operands<uint16_t> &ops, const Tile &tile) { decodeAnyDim(ops, tile); }

} // namespace nnsc::attention

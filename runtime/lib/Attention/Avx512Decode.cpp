//===- Avx512Decode.cpp - One-query paged attention, AVX-512 ----*- C++ -*-===//
//
// A decoding sequence has one query row per head, too few to fill vector lanes with rows, so
// the lanes hold 16 consecutive keys: each head's dot products with 16 keys are 16 vector
// FMA chains over head_dim, summed across lanes together by one transpose-and-add tree. The
// keys are read 16 positions at a time, every KV head in turn, so a block's K/V (all KV heads
// side by side in the cache) is streamed from memory once, in order. A sequence longer than
// one span (DecodeSpanKeys) is cut into spans, each a work item of its own, whose
// online-softmax states are merged afterwards (split-K, as FlashDecoding): one long sequence
// keeps every thread busy.
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

/// The online-softmax state of every query head of one decoding query over the keys at
/// positions [keyBegin, keyEnd): per head, the value rows weighted by exp(score - maxScore) and
/// summed (acc, [heads, Dim]), the running maximum score, and the sum of the weights (denom).
template <typename T, int NV>
void attendKeys(const Operands<T> &ops, const Tile &tile, int64_t keyBegin, int64_t keyEnd,
                float *acc, float *maxScore, float *denom) {
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
  std::fill_n(acc, d.numHeads * Dim, 0.f);
  std::fill_n(maxScore, d.numHeads, -std::numeric_limits<float>::infinity());
  std::fill_n(denom, d.numHeads, 0.f);

  for (int64_t first = keyBegin; first < keyEnd; first += 16) {
    const int n = int(std::min<int64_t>(16, keyEnd - first));
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
        const float old = maxScore[head];
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
        denom[head] = denom[head] * s.corrections[g] + _mm512_reduce_add_ps(p);
        maxScore[head] = top;
        _mm512_storeu_ps(s.probs.data() + g * 16, p);
      }
      for (int64_t g0 = 0; g0 < group; g0 += MaxHeadSet)
        withCount<MaxHeadSet>(int(std::min<int64_t>(MaxHeadSet, group - g0)), [&](auto gs) {
          accumulateValues<decltype(gs)::value, NV>(values, offset, n, s.probs.data() + g0 * 16,
                                                    s.corrections.data() + g0,
                                                    acc + (firstHead + g0) * Dim);
        });
    }
  }
}

/// Row `row`'s heads of the output: acc / denom per head (zeros for a head that saw no key).
template <typename T>
void writeHeads(const Operands<T> &ops, int64_t row, const float *acc, const float *denom) {
  const Dims &d = ops.dims;
  T *out = ops.out + row * d.numHeads * d.headDim;
  for (int64_t head = 0; head < d.numHeads; ++head) {
    // A query that sees no key at all (all absent) gets zeros.
    const __m512 inv = _mm512_set1_ps(denom[head] > 0.f ? 1.f / denom[head] : 0.f);
    for (int64_t i = head * d.headDim; i < (head + 1) * d.headDim; i += 16)
      store16(out + i, _mm512_mul_ps(_mm512_loadu_ps(acc + i), inv));
  }
}

template <typename T, int NV> void decodeTile(const Operands<T> &ops, const Tile &tile) {
  DecodeScratch<T> &s = scratch<T>();
  s.reserve(ops.dims);
  attendKeys<T, NV>(ops, tile, 0, tile.firstPos + 1, s.acc.data(), s.maxScore.data(),
                    s.denom.data());
  writeHeads(ops, tile.firstRow, s.acc.data(), s.denom.data());
}

template <typename T, int NV>
void decodeSpan(const Operands<T> &ops, const Tile &tile, int64_t span, float *state) {
  const Dims &d = ops.dims;
  const int64_t begin = span * DecodeSpanKeys;
  const int64_t end = std::min(begin + DecodeSpanKeys, tile.firstPos + 1);
  attendKeys<T, NV>(ops, tile, begin, end, state, state + d.numHeads * d.headDim,
                    state + d.numHeads * (d.headDim + 1));
}

template <typename T> void decodeAnyDim(const Operands<T> &ops, const Tile &tile) {
  withCount<16>(int(ops.dims.headDim / 16), [&](auto nv) { decodeTile<T, nv()>(ops, tile); });
}

template <typename T>
void decodeSpanAnyDim(const Operands<T> &ops, const Tile &tile, int64_t span, float *state) {
  withCount<16>(int(ops.dims.headDim / 16),
                [&](auto nv) { decodeSpan<T, nv()>(ops, tile, span, state); });
}

/// Merges the span states of one tile: each span's sums are rescaled from its own maximum to
/// the maximum over all spans, then added.
template <typename T>
void mergeSpans(const Operands<T> &ops, const Tile &tile, const float *states, int64_t spans) {
  const Dims &d = ops.dims;
  const int64_t stateFloats = decodeSpanStateFloats(d);
  DecodeScratch<T> &s = scratch<T>();
  s.reserve(d);
  for (int64_t head = 0; head < d.numHeads; ++head) {
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < spans; ++i)
      top = std::max(top, states[i * stateFloats + d.numHeads * d.headDim + head]);
    float *acc = s.acc.data() + head * d.headDim;
    std::fill_n(acc, d.headDim, 0.f);
    float denom = 0.f;
    for (int64_t i = 0; i < spans && top != -std::numeric_limits<float>::infinity(); ++i) {
      const float *state = states + i * stateFloats;
      const float spanMax = state[d.numHeads * d.headDim + head];
      if (spanMax == -std::numeric_limits<float>::infinity())
        continue; // every key of the span absent
      const float scale = _mm512_cvtss_f32(exp512(_mm512_set1_ps(spanMax - top)));
      denom += scale * state[d.numHeads * (d.headDim + 1) + head];
      const __m512 sv = _mm512_set1_ps(scale);
      for (int64_t c = 0; c < d.headDim; c += 16)
        _mm512_storeu_ps(acc + c, _mm512_fmadd_ps(sv, _mm512_loadu_ps(state + head * d.headDim + c),
                                                  _mm512_loadu_ps(acc + c)));
    }
    s.denom[size_t(head)] = denom;
  }
  writeHeads(ops, tile.firstRow, s.acc.data(), s.denom.data());
}

} // namespace

bool avx512Usable(int64_t headDim) {
  return headDim % 16 == 0 && headDim > 0 && headDim <= 256 && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

void decodeTileAvx512(const Operands<float> &ops, const Tile &tile) { decodeAnyDim(ops, tile); }
void decodeTileAvx512(const Operands<uint16_t> &ops, const Tile &tile) { decodeAnyDim(ops, tile); }

void decodeSpanAvx512(const Operands<float> &ops, const Tile &tile, int64_t span, float *state) {
  decodeSpanAnyDim(ops, tile, span, state);
}
void decodeSpanAvx512(const Operands<uint16_t> &ops, const Tile &tile, int64_t span, float *state) {
  decodeSpanAnyDim(ops, tile, span, state);
}

void mergeDecodeSpansAvx512(const Operands<float> &ops, const Tile &tile, const float *states,
                            int64_t spans) {
  mergeSpans(ops, tile, states, spans);
}
void mergeDecodeSpansAvx512(const Operands<uint16_t> &ops, const Tile &tile, const float *states,
                            int64_t spans) {
  mergeSpans(ops, tile, states, spans);
}

} // namespace nnsc::attention

//===- Avx512Decode.cpp - One-query paged attention, AVX-512 ----*- C++ -*-===//
//
// A decoding sequence has one query row per head, too few to fill vector lanes with rows, so
// the lanes hold 16 consecutive keys: each head's dot products with 16 keys are 16 vector
// dot-product chains over head_dim, summed across lanes together by one transpose-and-add
// tree. A call reads at most one span of keys (DecodeSpanKeys), so it works in three passes
// over them: every head's scores, then each head's softmax over all of its scores at once
// (one maximum, one exp per score, no rescaling of partial sums), then the probability-
// weighted value rows. A sequence longer than one span is cut into spans, each a work item of
// its own, whose softmax states are merged afterwards (split-K, as FlashDecoding): one long
// sequence keeps every thread busy.
//
// bfloat16 keys are multiplied with vdpbf16ps where the CPU has AVX512-BF16: pairs of bf16
// products summed into fp32 lanes, exact products as with widening, no conversions. Without
// it (or with NNSC_ATTENTION_BF16DOT=0) they are widened to float once per KV head.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "Avx512Math.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnsc::attention {

namespace {

/// Keys one call of attendKeys reads: a span, or a whole tile of at most one span.
constexpr int64_t MaxKeys = DecodeSpanKeys;
static_assert(MaxKeys % 16 == 0, "keys are read 16 at a time");

constexpr float NegInf = -std::numeric_limits<float>::infinity();

/// Per-thread buffers, grown to the largest shape seen and reused across calls.
template <typename T> struct DecodeScratch {
  std::vector<float> query, acc, maxScore, denom;
  std::vector<float> probs;   // [heads, MaxKeys]: the scores, then exp(score - max)
  std::vector<float> keyRows; // [16, head_dim], one KV head's keys widened from bfloat16
  std::vector<T> zeros;       // stands in for the rows past the span's end, one token wide

  void reserve(const Dims &d) {
    const auto heads = size_t(d.numHeads), dim = size_t(d.headDim);
    for (std::vector<float> *v : {&query, &acc})
      if (v->size() < heads * dim)
        v->resize(heads * dim);
    for (std::vector<float> *v : {&maxScore, &denom})
      if (v->size() < heads)
        v->resize(heads);
    if (probs.size() < heads * MaxKeys)
      probs.resize(heads * MaxKeys);
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

/// Chunk c of 32 bfloat16 values of a 16 * NV row: the last one is half a chunk (zeros
/// above) when NV is odd.
template <int NV>
__attribute__((target("avx512bf16"))) __m512bh loadPairs(const uint16_t *row, int c) {
  const __mmask32 mask = (NV % 2 && c == NV / 2) ? 0xffffu : 0xffffffffu;
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, row + 32 * c);
}

/// The scores of one head's bfloat16 query (unscaled) against 16 bfloat16 key rows with
/// vdpbf16ps. Compiled for AVX512-BF16 only here; Operands::bf16Dot says the CPU has it.
template <int NV>
__attribute__((target("avx512bf16"))) __m512 scoreKeysBf16Dot(const uint16_t *query,
                                                              const uint16_t *const (&keys)[16]) {
  constexpr int Chunks = (NV + 1) / 2;
  __m512bh q[Chunks];
  for (int c = 0; c < Chunks; ++c)
    q[c] = loadPairs<NV>(query, c);
  __m512 dots[16];
  for (int t = 0; t < 16; ++t) {
    __m512 a = _mm512_setzero_ps();
    for (int c = 0; c < Chunks; ++c)
      a = _mm512_dpbf16_ps(a, q[c], loadPairs<NV>(keys[t], c));
    dots[t] = a;
  }
  return transposeSum16(dots);
}

/// acc[g] = sum_i probs[g][i] * values[i] over the span's n keys, for GS heads whose
/// accumulator rows ([GS, 16 * NV]) are packed and whose probabilities are rows `stride`
/// apart.
template <int GS, int NV, typename T>
void accumulateValues(const T *const *values, int64_t n, int64_t offset, const float *probs,
                      int64_t stride, float *acc) {
  __m512 a[GS][NV];
  for (int g = 0; g < GS; ++g)
    for (int c = 0; c < NV; ++c)
      a[g][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; ++i) {
    const T *value = values[i] + offset;
    for (int c = 0; c < NV; ++c) {
      const __m512 v = load16(value + 16 * c);
      for (int g = 0; g < GS; ++g)
        a[g][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[g * stride + i]), v, a[g][c]);
    }
  }
  for (int g = 0; g < GS; ++g)
    for (int c = 0; c < NV; ++c)
      _mm512_storeu_ps(acc + (g * NV + c) * 16, a[g][c]);
}

/// The softmax state of the query heads of `kv` of one decoding query over the keys at
/// positions [keyBegin, keyEnd), at most MaxKeys of them: per head, the value rows weighted by
/// exp(score - maxScore) and summed (acc, [heads, Dim]), the maximum score, and the sum of the
/// weights (denom). A head that sees no key (all absent) has maxScore -inf and zero sums.
template <typename T, int NV>
void attendKeys(const Operands<T> &ops, const Tile &tile, KvHeads kv, int64_t keyBegin,
                int64_t keyEnd, float *acc, float *maxScore, float *denom) {
  constexpr int64_t Dim = 16 * NV;
  // Heads whose value accumulators are held in registers at once: at most 16 vectors.
  constexpr int MaxHeadSet = NV >= 16 ? 1 : 16 / NV;
  constexpr bool IsBf16 = std::is_same_v<T, uint16_t>;
  const Dims &d = ops.dims;
  const int64_t group = d.group();
  const int64_t tokenStride = d.numKvHeads * Dim;
  const int64_t numKeys = keyEnd - keyBegin;
  assert(numKeys >= 1 && numKeys <= MaxKeys && "a call reads one span at most");
  const int64_t numChunks = (numKeys + 15) / 16;
  DecodeScratch<T> &s = scratch<T>();
  s.reserve(d);
  const bool bf16Dot = IsBf16 && ops.bf16Dot;
  const int64_t headBegin = kv.begin * group, headEnd = kv.end * group;

  const T *q = ops.q + tile.firstRow * d.numHeads * Dim;
  if (!bf16Dot)
    for (int64_t i = headBegin * Dim; i < headEnd * Dim; i += 16)
      _mm512_storeu_ps(s.query.data() + i, _mm512_mul_ps(load16(q + i), _mm512_set1_ps(ops.scale)));

  // The K and V rows of the keys at KV head 0, zeros past the last key; per chunk of 16, the
  // keys that are there (in range and not absent).
  const T *keys[MaxKeys], *values[MaxKeys];
  __mmask16 valid[MaxKeys / 16];
  for (int64_t chunk = 0; chunk < numChunks; ++chunk) {
    const int n = int(std::min<int64_t>(16, numKeys - 16 * chunk));
    int64_t slots[16];
    slotsOf(tile, d.blockSize, keyBegin + 16 * chunk, n, slots);
    valid[chunk] = __mmask16((1u << n) - 1);
    for (int t = 0; t < 16; ++t) {
      const int64_t i = 16 * chunk + t;
      if (t < n) {
        keys[i] = ops.kCache + slots[t] * tokenStride;
        values[i] = ops.vCache + slots[t] * tokenStride;
        if (ops.absent && ops.absent[slots[t]])
          valid[chunk] &= __mmask16(~(1u << t));
      } else {
        keys[i] = values[i] = s.zeros.data();
      }
    }
  }

  // Pass 1: every head's scores, -inf for the keys that are not there.
  float *const probs = s.probs.data();
  for (int64_t chunk = 0; chunk < numChunks; ++chunk) {
    const T *const *chunkKeys = keys + 16 * chunk;
    // A decode step's K/V come from memory (the weights streamed since this layer last ran
    // evicted them), and these strided rows leave the hardware prefetchers behind: the next
    // chunk's key rows, and below this chunk's value rows (pass 3), are fetched ahead. One
    // sequence, a layer's K/V cold (nnsc-bench-attention 20 "decode Float", "streamed", Zen 5):
    // 7.8-8.3 -> 6.6-7.5 us at 64 keys, 9.6-11.5 -> 9.0-9.5 at 128, 17.4-20.9 -> 16.4-18.0 at 256.
    if (chunk + 1 < numChunks)
      for (int t = 0; t < 16; ++t)
        for (int64_t line = kv.begin * Dim * int64_t(sizeof(T));
             line < kv.end * Dim * int64_t(sizeof(T)); line += 64)
          _mm_prefetch(reinterpret_cast<const char *>(chunkKeys[16 + t]) + line, _MM_HINT_T0);
    for (int64_t kvHead = kv.begin; kvHead < kv.end; ++kvHead) {
      const int64_t offset = kvHead * Dim;
      const int64_t firstHead = kvHead * group;
      const T *rows[16];
      for (int t = 0; t < 16; ++t)
        rows[t] = chunkKeys[t] + offset;
      for (int t = 0; t < 16; ++t)
        for (int64_t line = 0; line < Dim * int64_t(sizeof(T)); line += 64)
          _mm_prefetch(reinterpret_cast<const char *>(values[16 * chunk + t] + offset) + line,
                       _MM_HINT_T0);
      // Without the bf16 dot product every head of the group reads the keys: widen them once.
      const float *keyRows[16];
      if (!bf16Dot) {
        for (int t = 0; t < 16; ++t) {
          if constexpr (IsBf16) {
            float *widened = s.keyRows.data() + t * Dim;
            for (int c = 0; c < NV; ++c)
              _mm512_storeu_ps(widened + 16 * c, load16(rows[t] + 16 * c));
            keyRows[t] = widened;
          } else {
            keyRows[t] = rows[t];
          }
        }
      }
      for (int64_t head = firstHead; head < firstHead + group; ++head) {
        __m512 scores;
        if constexpr (IsBf16) {
          scores = bf16Dot ? _mm512_mul_ps(scoreKeysBf16Dot<NV>(q + head * Dim, rows),
                                           _mm512_set1_ps(ops.scale))
                           : scoreKeys<NV>(s.query.data() + head * Dim, keyRows);
        } else {
          scores = scoreKeys<NV>(s.query.data() + head * Dim, keyRows);
        }
        _mm512_storeu_ps(probs + head * MaxKeys + 16 * chunk,
                         _mm512_mask_mov_ps(_mm512_set1_ps(NegInf), valid[chunk], scores));
      }
    }
  }

  // Pass 2: each head's softmax weights over all of its scores.
  for (int64_t head = headBegin; head < headEnd; ++head) {
    float *row = probs + head * MaxKeys;
    __m512 top = _mm512_set1_ps(NegInf);
    for (int64_t chunk = 0; chunk < numChunks; ++chunk)
      top = _mm512_max_ps(top, _mm512_loadu_ps(row + 16 * chunk));
    const float max = _mm512_reduce_max_ps(top);
    maxScore[head] = max;
    __m512 sum = _mm512_setzero_ps();
    for (int64_t chunk = 0; chunk < numChunks; ++chunk) {
      // A head with no key at all gets zero weights (nothing to exponentiate against).
      const __mmask16 there = max == NegInf ? __mmask16(0) : valid[chunk];
      const __m512 p = _mm512_maskz_mov_ps(
          there, exp512(_mm512_sub_ps(_mm512_loadu_ps(row + 16 * chunk), _mm512_set1_ps(max))));
      _mm512_storeu_ps(row + 16 * chunk, p);
      sum = _mm512_add_ps(sum, p);
    }
    denom[head] = _mm512_reduce_add_ps(sum);
  }

  // Pass 3: the weighted value rows, a register-sized set of a group's heads at a time.
  for (int64_t kvHead = kv.begin; kvHead < kv.end; ++kvHead) {
    const int64_t firstHead = kvHead * group;
    for (int64_t g0 = 0; g0 < group; g0 += MaxHeadSet)
      withCount<MaxHeadSet>(int(std::min<int64_t>(MaxHeadSet, group - g0)), [&](auto gs) {
        accumulateValues<decltype(gs)::value, NV>(values, numKeys, kvHead * Dim,
                                                  probs + (firstHead + g0) * MaxKeys, MaxKeys,
                                                  acc + (firstHead + g0) * Dim);
      });
  }
}

/// Row `row`'s query heads of `kv` in the output: acc / denom per head (zeros for a head that
/// saw no key).
template <typename T>
void writeHeads(const Operands<T> &ops, int64_t row, KvHeads kv, const float *acc,
                const float *denom) {
  const Dims &d = ops.dims;
  T *out = ops.out + row * d.numHeads * d.headDim;
  for (int64_t head = kv.begin * d.group(); head < kv.end * d.group(); ++head) {
    // A query that sees no key at all (all absent) gets zeros.
    const __m512 inv = _mm512_set1_ps(denom[head] > 0.f ? 1.f / denom[head] : 0.f);
    for (int64_t i = head * d.headDim; i < (head + 1) * d.headDim; i += 16)
      store16(out + i, _mm512_mul_ps(_mm512_loadu_ps(acc + i), inv));
  }
}

template <typename T, int NV>
void decodeTile(const Operands<T> &ops, const Tile &tile, KvHeads kv) {
  DecodeScratch<T> &s = scratch<T>();
  s.reserve(ops.dims);
  attendKeys<T, NV>(ops, tile, kv, 0, tile.firstPos + 1, s.acc.data(), s.maxScore.data(),
                    s.denom.data());
  writeHeads(ops, tile.firstRow, kv, s.acc.data(), s.denom.data());
}

template <typename T, int NV>
void decodeSpan(const Operands<T> &ops, const Tile &tile, int64_t span, KvHeads kv, float *state) {
  const Dims &d = ops.dims;
  const int64_t begin = span * DecodeSpanKeys;
  const int64_t end = std::min(begin + DecodeSpanKeys, tile.firstPos + 1);
  attendKeys<T, NV>(ops, tile, kv, begin, end, state, state + d.numHeads * d.headDim,
                    state + d.numHeads * (d.headDim + 1));
}

template <typename T> void decodeAnyDim(const Operands<T> &ops, const Tile &tile, KvHeads kv) {
  withCount<16>(int(ops.dims.headDim / 16), [&](auto nv) { decodeTile<T, nv()>(ops, tile, kv); });
}

template <typename T>
void decodeSpanAnyDim(const Operands<T> &ops, const Tile &tile, int64_t span, KvHeads kv,
                      float *state) {
  withCount<16>(int(ops.dims.headDim / 16),
                [&](auto nv) { decodeSpan<T, nv()>(ops, tile, span, kv, state); });
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
  writeHeads(ops, tile.firstRow, KvHeads{0, d.numKvHeads}, s.acc.data(), s.denom.data());
}

} // namespace

void decodeTileAvx512(const Operands<float> &ops, const Tile &tile, KvHeads heads) {
  decodeAnyDim(ops, tile, heads);
}
void decodeTileAvx512(const Operands<uint16_t> &ops, const Tile &tile, KvHeads heads) {
  decodeAnyDim(ops, tile, heads);
}

void decodeSpanAvx512(const Operands<float> &ops, const Tile &tile, int64_t span, KvHeads heads,
                      float *state) {
  decodeSpanAnyDim(ops, tile, span, heads, state);
}
void decodeSpanAvx512(const Operands<uint16_t> &ops, const Tile &tile, int64_t span, KvHeads heads,
                      float *state) {
  decodeSpanAnyDim(ops, tile, span, heads, state);
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

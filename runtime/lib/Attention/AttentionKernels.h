//===- AttentionKernels.h - Paged attention work items ----------*- C++ -*-===//
//
// Private to runtime/lib/Attention: the work items PagedAttention.cpp cuts a step into and
// the kernels that run one item. The header is free of LibTorch so the AVX-512 kernels can be
// compiled with AVX-512 enabled without also compiling LibTorch's inline functions that way
// (the linker could then pick an AVX-512 copy for callers on any CPU). bfloat16 is passed as
// its bits, uint16_t.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LIB_ATTENTION_ATTENTIONKERNELS_H
#define NNSC_RUNTIME_LIB_ATTENTION_ATTENTIONKERNELS_H

#include <cstdint>

namespace nnsc::attention {

/// Query rows per prefill tile: with the query heads of one KV head, 16 * group rows.
constexpr int64_t TileQueries = 16;

struct Dims {
  int64_t numHeads;
  int64_t numKvHeads;
  int64_t headDim;
  int64_t numBlocks;
  int64_t blockSize;

  int64_t group() const { return numHeads / numKvHeads; }
};

/// Queries [firstRow, firstRow + numQueries) of one sequence at positions
/// [firstPos, firstPos + numQueries), and the block table of that sequence.
struct Tile {
  int64_t firstRow;
  int64_t numQueries;
  int64_t firstPos;
  const int32_t *blockTable;
};

/// The cache slots of positions [first, first + n) (n <= 16) of the tile's sequence: one
/// division per call instead of two per position.
inline void slotsOf(const Tile &tile, int64_t blockSize, int64_t first, int n,
                    int64_t (&slots)[16]) {
  int64_t block = first / blockSize, offset = first % blockSize;
  for (int t = 0; t < n; ++t) {
    slots[t] = int64_t(tile.blockTable[block]) * blockSize + offset;
    if (++offset == blockSize) {
      offset = 0;
      ++block;
    }
  }
}

/// One step's tensors as raw pointers, all of one element type T.
template <typename T> struct Operands {
  const T *q;      // [num_tokens, num_heads, head_dim]
  T *out;          // [num_tokens, num_heads, head_dim]
  const T *kCache; // [num_blocks, block_size, num_kv_heads, head_dim]
  const T *vCache; // [num_blocks, block_size, num_kv_heads, head_dim]
  Dims dims;
  float scale;
  /// Per cache slot, or null: non-zero where the layer has no K/V for that position (a
  /// skipped layer's rows, docs/Runtime.md "Skipping a module"); attention leaves it out.
  const uint8_t *absent = nullptr;
  /// Whether the kernels multiply bfloat16 with vdpbf16ps (bf16DotUsable()): the decode
  /// kernel its queries and keys, the prefill kernel those and its probabilities and values;
  /// otherwise they widen them to float.
  bool bf16Dot = false;
  /// Sliding window in positions, 0 for none: the query at position p sees (p - window, p].
  int64_t window = 0;
  /// Batch-invariant mode: every tile on the portable kernel scoring keys one dot product at a
  /// time, so a query's result does not depend on the tile it is in (a decode step's or a
  /// prefill chunk's, beside which queries).
  bool rowInvariant = false;
};

/// Whether some query of the tile has keys outside its window (only the portable kernel
/// masks them).
template <typename T> bool reachesPastWindow(const Operands<T> &ops, const Tile &tile) {
  return ops.window > 0 && tile.firstPos + tile.numQueries > ops.window;
}

/// Whether some position the tile's queries attend to is absent.
template <typename T> bool attendsToAbsent(const Operands<T> &ops, const Tile &tile) {
  if (!ops.absent)
    return false;
  const int64_t numKeys = tile.firstPos + tile.numQueries, bs = ops.dims.blockSize;
  for (int64_t p = 0; p < numKeys; ++p)
    if (ops.absent[int64_t(tile.blockTable[p / bs]) * bs + p % bs])
      return true;
  return false;
}

/// Whether this CPU runs the AVX-512 kernels and they handle head_dim (a multiple of 16, at
/// most 256).
bool avx512Usable(int64_t headDim);

/// Whether the CPU has AVX512-BF16 for the kernels' bfloat16 products, and
/// NNSC_ATTENTION_BF16DOT=0 (for A/B runs and the widening path's tests) does not turn it off.
bool bf16DotUsable();

/// AVX-512: the query heads of KV head `kvHead` for the queries of `tile`.
void prefillTileAvx512(const Operands<float> &ops, const Tile &tile, int64_t kvHead);
void prefillTileAvx512(const Operands<uint16_t> &ops, const Tile &tile, int64_t kvHead);

/// The KV heads [begin, end) of a decode work item, with their query heads. Heads are
/// independent, so how a step splits them does not change any head's result.
struct KvHeads {
  int64_t begin, end;
};

/// AVX-512: the query heads of `heads` of a one-query tile (a decoding sequence).
void decodeTileAvx512(const Operands<float> &ops, const Tile &tile, KvHeads heads);
void decodeTileAvx512(const Operands<uint16_t> &ops, const Tile &tile, KvHeads heads);

/// Key positions per span of a decoding sequence. Fixed, not derived from the thread count or
/// the batch, so a sequence's result does not depend on either.
constexpr int64_t DecodeSpanKeys = 64;

/// The spans of a decoding tile's keys.
inline int64_t decodeSpans(const Tile &tile) {
  return (tile.firstPos + 1 + DecodeSpanKeys - 1) / DecodeSpanKeys;
}

/// Floats of one span's state: per head the weighted value sum (head_dim), the maximum score
/// and the sum of the weights, laid out [heads * head_dim | heads | heads].
inline int64_t decodeSpanStateFloats(const Dims &d) { return d.numHeads * (d.headDim + 2); }

/// AVX-512: span `span` of a one-query tile's keys into `state` (decodeSpanStateFloats), for
/// the query heads of `heads` (the other heads' parts of `state` are left as they are).
void decodeSpanAvx512(const Operands<float> &ops, const Tile &tile, int64_t span, KvHeads heads,
                      float *state);
void decodeSpanAvx512(const Operands<uint16_t> &ops, const Tile &tile, int64_t span, KvHeads heads,
                      float *state);

/// AVX-512: the tile's output from the states of its `spans` spans, consecutive in `states`.
void mergeDecodeSpansAvx512(const Operands<float> &ops, const Tile &tile, const float *states,
                            int64_t spans);
void mergeDecodeSpansAvx512(const Operands<uint16_t> &ops, const Tile &tile, const float *states,
                            int64_t spans);

/// Portable C++: the query heads of KV head `kvHead` for the queries of `tile`.
void attendTilePortable(const Operands<float> &ops, const Tile &tile, int64_t kvHead);
void attendTilePortable(const Operands<uint16_t> &ops, const Tile &tile, int64_t kvHead);

} // namespace nnsc::attention

#endif // NNSC_RUNTIME_LIB_ATTENTION_ATTENTIONKERNELS_H

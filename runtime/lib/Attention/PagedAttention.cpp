//===- PagedAttention.cpp - CPU paged attention entry points ----*- C++ -*-===//
//
// Checks a step's tensors and metadata, cuts the step into work items and runs them on the
// runtime's thread pool. A prefill item is a tile of up to TileQueries queries of one
// sequence times the query heads of one KV head; a decode item is one span of one sequence's
// keys, all heads, or one KV head's where whole spans would leave a thread idle.
// Items are claimed one at a time from a shared counter, so items of unequal length balance
// across threads and a thread the OS deschedules on a shared machine delays no one. The
// kernels (AttentionKernels.h) are AVX-512 where the CPU and head size allow, portable C++
// otherwise.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include "AttentionKernels.h"
#include "nnsc/Runtime/Kernels/ThreadPool.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace nnsc {

// The CPU checks live here, compiled for the build's baseline ISA: they run before anything
// knows the CPU has AVX-512, so they must not be compiled with it (Avx512*.cpp are).
bool attention::avx512Usable(int64_t headDim) {
  return headDim % 16 == 0 && headDim > 0 && headDim <= 256 && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

bool attention::bf16DotUsable() {
  static const bool usable =
      __builtin_cpu_supports("avx512bf16") && RuntimeOptions::get().attentionBf16Dot;
  return usable;
}

using attention::Dims;
using attention::Operands;
using attention::Tile;
using attention::TileQueries;

namespace {

/// Calls work(i) for every i in [0, numItems) on the thread pool.
template <typename F> void forEachItem(int64_t numItems, const F &work) {
  const int threads = at::get_num_threads();
  if (threads <= 1 || numItems <= 1) {
    for (int64_t i = 0; i < numItems; ++i)
      work(i);
    return;
  }
  std::atomic<int64_t> next{0};
  kernels::ThreadPool::shared(threads).parallel([&](int, int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < numItems;
         i = next.fetch_add(1, std::memory_order_relaxed))
      work(i);
  });
}

/// Decoding tiles on AVX-512: one work item per span of each tile's keys; a tile of one span
/// writes its output directly, a longer one leaves span states that a second pass merges.
/// Where a span holds more keys than a thread's share of the step's (one sequence: 64 + 8
/// keys on two threads, or any sequence of one span; always where there are fewer items than
/// threads, since no item holds more keys than the longest span), the items are cut further
/// into one per KV head, so the threads finish together.
template <typename T> void runDecodeTiles(const Operands<T> &ops, const std::vector<Tile> &tiles) {
  struct Item {
    int64_t tile, span, state; // state: the span's slot in `states`, -1 for a one-span tile
    attention::KvHeads heads;
  };
  struct Merge {
    int64_t tile, firstState, spans;
  };
  std::vector<Item> items;
  std::vector<Merge> merges;
  int64_t slots = 0, keys = 0, longestSpan = 0;
  const attention::KvHeads allHeads{0, ops.dims.numKvHeads};
  for (int64_t t = 0; t < int64_t(tiles.size()); ++t) {
    const int64_t tileKeys = tiles[size_t(t)].firstPos + 1;
    const int64_t spans = attention::decodeSpans(tiles[size_t(t)]);
    keys += tileKeys;
    longestSpan = std::max(longestSpan, std::min(tileKeys, attention::DecodeSpanKeys));
    if (spans == 1) {
      items.push_back({t, 0, -1, allHeads});
      continue;
    }
    for (int64_t span = 0; span < spans; ++span)
      items.push_back({t, span, slots + span, allHeads});
    merges.push_back({t, slots, spans});
    slots += spans;
  }
  if (allHeads.end > 1 && longestSpan * at::get_num_threads() > keys) {
    std::vector<Item> perHead;
    for (const Item &item : items)
      for (int64_t h = 0; h < allHeads.end; ++h)
        perHead.push_back({item.tile, item.span, item.state, {h, h + 1}});
    items = std::move(perHead);
  }
  const int64_t stateFloats = attention::decodeSpanStateFloats(ops.dims);
  std::vector<float> states(size_t(slots * stateFloats));
  forEachItem(int64_t(items.size()), [&](int64_t i) {
    const Item &item = items[size_t(i)];
    const Tile &tile = tiles[size_t(item.tile)];
    if (item.state < 0)
      attention::decodeTileAvx512(ops, tile, item.heads);
    else
      attention::decodeSpanAvx512(ops, tile, item.span, item.heads,
                                  states.data() + item.state * stateFloats);
  });
  forEachItem(int64_t(merges.size()), [&](int64_t i) {
    const Merge &m = merges[size_t(i)];
    attention::mergeDecodeSpansAvx512(ops, tiles[size_t(m.tile)],
                                      states.data() + m.firstState * stateFloats, m.spans);
  });
}

template <typename T>
void runTiles(const Operands<T> &ops, const std::vector<Tile> &tiles, bool decode) {
  const Dims &d = ops.dims;
  const auto numTiles = static_cast<int64_t>(tiles.size());
  // The AVX-512 kernels have no sliding window: a tile whose keys reach past it runs portable.
  const bool windowed = std::any_of(tiles.begin(), tiles.end(), [&](const Tile &tile) {
    return attention::reachesPastWindow(ops, tile);
  });
  if (ops.rowInvariant || !attention::avx512Usable(d.headDim) || (decode && windowed)) {
    forEachItem(numTiles * d.numKvHeads, [&](int64_t item) {
      attention::attendTilePortable(ops, tiles[item / d.numKvHeads], item % d.numKvHeads);
    });
  } else if (decode) {
    runDecodeTiles(ops, tiles);
  } else {
    // The prefill tiles have no absent-position mask nor window; the rare tile that needs one
    // (its sequence skipped this layer earlier, or reaches past a local layer's window) takes
    // the portable kernel.
    std::vector<uint8_t> portable; // empty: no map, every tile on AVX-512
    if (ops.absent || windowed)
      for (const Tile &tile : tiles)
        portable.push_back(attention::attendsToAbsent(ops, tile) ||
                           attention::reachesPastWindow(ops, tile));
    forEachItem(numTiles * d.numKvHeads, [&](int64_t item) {
      const Tile &tile = tiles[item / d.numKvHeads];
      if (!portable.empty() && portable[item / d.numKvHeads])
        attention::attendTilePortable(ops, tile, item % d.numKvHeads);
      else
        attention::prefillTileAvx512(ops, tile, item % d.numKvHeads);
    });
  }
}

/// Checks q against the caches and returns the dimensions.
Dims checkShapes(const char *fn, const torch::Tensor &q, const torch::Tensor &kCache,
                 const torch::Tensor &vCache) {
  TORCH_CHECK(q.dim() == 3, fn, ": q must be [tokens, num_heads, head_dim], got ", q.sizes());
  TORCH_CHECK(kCache.dim() == 4, fn,
              ": kCache must be [num_blocks, block_size, num_kv_heads, head_dim], got ",
              kCache.sizes());
  TORCH_CHECK(vCache.sizes() == kCache.sizes(), fn, ": vCache ", vCache.sizes(),
              " differs from kCache ", kCache.sizes());
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 || q.scalar_type() == torch::kBFloat16, fn,
              ": only float32 and bfloat16 are supported, got ", q.scalar_type());
  TORCH_CHECK(kCache.scalar_type() == q.scalar_type() && vCache.scalar_type() == q.scalar_type(),
              fn, ": q, kCache and vCache must have one dtype, got ", q.scalar_type(), ", ",
              kCache.scalar_type(), ", ", vCache.scalar_type());
  TORCH_CHECK(q.device().is_cpu() && kCache.device().is_cpu() && vCache.device().is_cpu(), fn,
              ": tensors must be on the CPU");
  TORCH_CHECK(kCache.is_contiguous() && vCache.is_contiguous(), fn,
              ": kCache and vCache must be contiguous");
  Dims d{q.size(1), kCache.size(2), q.size(2), kCache.size(0), kCache.size(1)};
  TORCH_CHECK(kCache.size(3) == d.headDim, fn, ": head_dim of q (", d.headDim,
              ") differs from the cache's (", kCache.size(3), ")");
  TORCH_CHECK(d.numKvHeads > 0 && d.numHeads % d.numKvHeads == 0, fn, ": num_heads (", d.numHeads,
              ") must be a multiple of num_kv_heads (", d.numKvHeads, ")");
  return d;
}

/// Checks that sequence `seq` can read `numKeys` tokens through its block table row.
void checkBlockTable(const char *fn, const torch::Tensor &blockTables, int64_t seq, int64_t numKeys,
                     const Dims &d) {
  int64_t needed = (numKeys + d.blockSize - 1) / d.blockSize;
  TORCH_CHECK(needed <= blockTables.size(1), fn, ": sequence ", seq, " attends to ", numKeys,
              " tokens, which needs ", needed, " blocks, but blockTables has ", blockTables.size(1),
              " columns");
  const int32_t *row = blockTables.data_ptr<int32_t>() + seq * blockTables.size(1);
  for (int64_t j = 0; j < needed; ++j)
    TORCH_CHECK(row[j] >= 0 && row[j] < d.numBlocks, fn, ": sequence ", seq, " block ", j, " is ",
                row[j], ", outside the cache's ", d.numBlocks, " blocks");
}

void checkIndexTensor(const char *fn, const char *name, const torch::Tensor &t, int64_t dims) {
  TORCH_CHECK(t.defined() && t.dim() == dims && t.scalar_type() == torch::kInt32 &&
                  t.is_contiguous() && t.device().is_cpu(),
              fn, ": ", name, " must be a contiguous ", dims, "-d int32 CPU tensor");
}

/// Runs the tiles (one-query tiles of decoding sequences if `decode`) into a new tensor.
torch::Tensor dispatch(const char *fn, const torch::Tensor &q, const torch::Tensor &kCache,
                       const torch::Tensor &vCache, const torch::Tensor &absent,
                       const std::vector<Tile> &tiles, const Dims &d, double scale, int64_t window,
                       bool decode, bool rowInvariant) {
  TORCH_CHECK(window >= 0, fn, ": negative sliding window ", window);
  TORCH_CHECK(!absent.defined() ||
                  (absent.scalar_type() == torch::kUInt8 && absent.is_contiguous() &&
                   absent.device().is_cpu() && absent.numel() == d.numBlocks * d.blockSize),
              fn, ": absent must be a contiguous uint8 CPU tensor of num_blocks * block_size (",
              d.numBlocks * d.blockSize, ") elements, got ",
              absent.defined() ? absent.sizes() : c10::IntArrayRef{});
  const uint8_t *absentSlots = absent.defined() ? absent.data_ptr<uint8_t>() : nullptr;
  torch::Tensor out = torch::empty_like(q);
  if (q.scalar_type() == torch::kFloat32) {
    runTiles(Operands<float>{q.data_ptr<float>(), out.data_ptr<float>(), kCache.data_ptr<float>(),
                             vCache.data_ptr<float>(), d, static_cast<float>(scale), absentSlots,
                             false, window, rowInvariant},
             tiles, decode);
  } else {
    auto bits = [](const torch::Tensor &t) { return static_cast<uint16_t *>(t.data_ptr()); };
    runTiles(Operands<uint16_t>{bits(q), bits(out), bits(kCache), bits(vCache), d,
                                static_cast<float>(scale), absentSlots, attention::bf16DotUsable(),
                                window, rowInvariant},
             tiles, decode);
  }
  return out;
}

} // namespace

torch::Tensor prefillAttention(const torch::Tensor &query, const torch::Tensor &kCache,
                               const torch::Tensor &vCache, const AttentionMetadata &meta,
                               double scale, const torch::Tensor &absent, int64_t window) {
  const char *fn = "prefillAttention";
  Dims d = checkShapes(fn, query, kCache, vCache);
  checkIndexTensor(fn, "cuSeqlensQ", meta.cuSeqlensQ, 1);
  checkIndexTensor(fn, "cuSeqlensK", meta.cuSeqlensK, 1);
  checkIndexTensor(fn, "blockTables", meta.blockTables, 2);
  int64_t numSeqs = meta.cuSeqlensQ.size(0) - 1;
  TORCH_CHECK(
      numSeqs >= 0 && meta.cuSeqlensK.size(0) == numSeqs + 1 && meta.blockTables.size(0) == numSeqs,
      fn, ": cuSeqlensQ ", meta.cuSeqlensQ.sizes(), ", cuSeqlensK ", meta.cuSeqlensK.sizes(),
      " and blockTables ", meta.blockTables.sizes(), " disagree on the number of sequences");
  const int32_t *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  const int32_t *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  TORCH_CHECK(cuQ[0] == 0 && cuK[0] == 0, fn, ": cuSeqlensQ and cuSeqlensK must start at 0");
  TORCH_CHECK(cuQ[numSeqs] == query.size(0), fn, ": cuSeqlensQ ends at ", cuQ[numSeqs],
              " but q has ", query.size(0), " rows");

  torch::Tensor q = query.contiguous();
  std::vector<Tile> tiles;
  for (int64_t i = 0; i < numSeqs; ++i) {
    int64_t numQ = cuQ[i + 1] - cuQ[i];
    int64_t numK = cuK[i + 1] - cuK[i];
    TORCH_CHECK(numQ >= 0 && numK >= numQ, fn, ": sequence ", i, " has ", numQ,
                " queries but attends to ", numK,
                " tokens (needs 0 <= queries <= attended tokens)");
    checkBlockTable(fn, meta.blockTables, i, numK, d);
    const int32_t *table = meta.blockTables.data_ptr<int32_t>() + i * meta.blockTables.size(1);
    for (int64_t start = 0; start < numQ; start += TileQueries)
      tiles.push_back(
          {cuQ[i] + start, std::min(TileQueries, numQ - start), numK - numQ + start, table});
  }
  return dispatch(fn, q, kCache, vCache, absent, tiles, d, scale, window, /*decode=*/false,
                  meta.batchInvariant);
}

torch::Tensor decodeAttention(const torch::Tensor &query, const torch::Tensor &kCache,
                              const torch::Tensor &vCache, const torch::Tensor &contextLens,
                              const torch::Tensor &blockTables, double scale,
                              const torch::Tensor &absent, int64_t window) {
  const char *fn = "decodeAttention";
  Dims d = checkShapes(fn, query, kCache, vCache);
  checkIndexTensor(fn, "contextLens", contextLens, 1);
  checkIndexTensor(fn, "blockTables", blockTables, 2);
  int64_t numSeqs = query.size(0);
  TORCH_CHECK(contextLens.size(0) == numSeqs && blockTables.size(0) == numSeqs, fn, ": q has ",
              numSeqs, " sequences but contextLens has ", contextLens.size(0), " and blockTables ",
              blockTables.size(0));
  torch::Tensor q = query.contiguous();
  const int32_t *lens = contextLens.data_ptr<int32_t>();
  std::vector<Tile> tiles;
  for (int64_t i = 0; i < numSeqs; ++i) {
    TORCH_CHECK(lens[i] >= 1, fn, ": sequence ", i, " has context length ", lens[i],
                " (it must include the query's own token)");
    checkBlockTable(fn, blockTables, i, lens[i], d);
    tiles.push_back({i, 1, lens[i] - 1, blockTables.data_ptr<int32_t>() + i * blockTables.size(1)});
  }
  return dispatch(fn, q, kCache, vCache, absent, tiles, d, scale, window, /*decode=*/true,
                  /*rowInvariant=*/false);
}

torch::Tensor pagedAttention(const torch::Tensor &q, const torch::Tensor &kCache,
                             const torch::Tensor &vCache, const AttentionMetadata &meta,
                             double scale, const torch::Tensor &absent, int64_t window) {
  // Batch-invariant mode takes a decode step's one query per sequence as a prefill of one
  // query: one kernel for every query.
  if (meta.isPrefill || meta.batchInvariant)
    return prefillAttention(q, kCache, vCache, meta, scale, absent, window);
  return decodeAttention(q, kCache, vCache, meta.contextLens, meta.blockTables, scale, absent,
                         window);
}

} // namespace nnsc

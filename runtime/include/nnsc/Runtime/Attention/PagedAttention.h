//===- PagedAttention.h - CPU paged attention kernels -----------*- C++ -*-===//
//
// Attention over a paged KV cache, for a flat batch of tokens from many sequences. A cache is
// one tensor per layer for K and one for V:
//   [num_blocks, block_size, num_kv_heads, head_dim]
// and sequence i's logical block j lives in physical block blockTables[i][j]. Heads are
// grouped (GQA): query head h reads KV head h / (num_heads / num_kv_heads). Attention is
// causal: the query at position p attends to positions [0, p], except positions marked in
// the optional `absent` map ([num_blocks * block_size] uint8 per layer, non-zero where the
// layer holds no K/V for that cache slot: rows of a layer a trace skipped, as transformers'
// cache of a skipped layer has no such positions; a query that sees no key gets zeros).
// Inputs are float32 or
// bfloat16 (all of one dtype); accumulation is float32. Each call checks its shapes, dtypes
// and metadata and throws c10::Error naming what is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ATTENTION_PAGEDATTENTION_H
#define NNSC_RUNTIME_ATTENTION_PAGEDATTENTION_H

#include "nnsc/Runtime/Attention/AttentionMetadata.h"

#include <torch/torch.h>

namespace nnsc {

/// Writes this step's K/V into the cache: row r goes to slot slotMapping[r]
/// (block = slot / block_size, offset = slot % block_size); negative slots are skipped.
///   key, value:      [num_tokens, num_kv_heads, head_dim]
///   kCache, vCache:  [num_blocks, block_size, num_kv_heads, head_dim]
///   slotMapping:     [num_tokens] int32 or int64
void storeKVCache(const torch::Tensor &key, const torch::Tensor &value, torch::Tensor &kCache,
                  torch::Tensor &vCache, const torch::Tensor &slotMapping);

/// RoPE (half-split, as RotaryEmbedding::apply) on q and k, then storeKVCache of the rotated
/// k and of v, in one pass over the step's rows: the rotated k goes straight into its cache
/// slot and no intermediate tensors are made. Each element is rounded as the unfused LibTorch
/// ops round it (x * cos and rotate_half(x) * sin in the dtype, then their sum), so the
/// results are bit-identical to RotaryEmbedding::apply followed by storeKVCache. Rows with a
/// negative slot are rotated but not stored.
///   q:               [num_tokens, num_heads, head_dim]
///   key, value:      [num_tokens, num_kv_heads, head_dim]
///                    (rows may be strided, as views of a fused QKV projection are)
///   cos, sin:        [num_tokens, head_dim]
///   kCache, vCache:  [num_blocks, block_size, num_kv_heads, head_dim]
///   slotMapping:     [num_tokens] int32 or int64
///   returns          the rotated q, [num_tokens, num_heads, head_dim], contiguous
torch::Tensor ropeAndStoreKV(const torch::Tensor &q, const torch::Tensor &key,
                             const torch::Tensor &value, const torch::Tensor &cos,
                             const torch::Tensor &sin, torch::Tensor &kCache, torch::Tensor &vCache,
                             const torch::Tensor &slotMapping);

/// Varlen causal attention for a prefill step, reading K/V from the cache (store the step's
/// K/V first). Sequence i's queries are rows [cuSeqlensQ[i], cuSeqlensQ[i + 1]) and are the
/// last positions of its cuSeqlensK[i + 1] - cuSeqlensK[i] attended tokens, so a chunk or a
/// prompt with a cached prefix attends to the earlier tokens already in the cache.
///   q:       [num_tokens, num_heads, head_dim]
///   returns  [num_tokens, num_heads, head_dim], the dtype of q
/// Uses meta.cuSeqlensQ, meta.cuSeqlensK and meta.blockTables. With `window` > 0 the query at
/// position p attends to positions (p - window, p] only (a sliding-window layer).
torch::Tensor prefillAttention(const torch::Tensor &q, const torch::Tensor &kCache,
                               const torch::Tensor &vCache, const AttentionMetadata &meta,
                               double scale, const torch::Tensor &absent = {}, int64_t window = 0);

/// One query per sequence, attending to the first contextLens[i] positions of sequence i
/// (the query's own K/V included: store it first).
///   q:            [num_seqs, num_heads, head_dim]
///   contextLens:  [num_seqs] int32
///   blockTables:  [num_seqs, max_blocks_per_seq] int32
///   returns       [num_seqs, num_heads, head_dim], the dtype of q
torch::Tensor decodeAttention(const torch::Tensor &q, const torch::Tensor &kCache,
                              const torch::Tensor &vCache, const torch::Tensor &contextLens,
                              const torch::Tensor &blockTables, double scale,
                              const torch::Tensor &absent = {}, int64_t window = 0);

/// The step's attention: prefillAttention or decodeAttention as meta.isPrefill says.
torch::Tensor pagedAttention(const torch::Tensor &q, const torch::Tensor &kCache,
                             const torch::Tensor &vCache, const AttentionMetadata &meta,
                             double scale, const torch::Tensor &absent = {}, int64_t window = 0);

} // namespace nnsc

#endif // NNSC_RUNTIME_ATTENTION_PAGEDATTENTION_H

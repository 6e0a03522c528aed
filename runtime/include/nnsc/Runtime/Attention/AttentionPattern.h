//===- AttentionPattern.h - attention with its probabilities materialized -*- C++ -*-===//
//
// The path a layer takes when a trace binds its `self_attn.pattern` site: eager attention
// (transformers' eager_attention_forward) over the paged KV cache, in two halves so the
// softmax probabilities can be read and rewritten between them. Layers nobody binds keep the
// fused kernels of PagedAttention.h; this is the slower path and only bound layers pay it.
//
// The pattern of a step is one flat tensor [num_tokens, num_heads, max_context] in fp32: row r
// holds its query's probabilities over positions [0, S) of its sequence, S = cuSeqlensK[i + 1]
// - cuSeqlensK[i] (every position of the context so far, prefix-cached ones included), and
// zeros past S. A sequence's site value [heads, T, S] is a strided view of its rows.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ATTENTION_ATTENTIONPATTERN_H
#define NNSC_RUNTIME_ATTENTION_ATTENTIONPATTERN_H

#include "nnsc/Runtime/Attention/AttentionMetadata.h"

#include <torch/torch.h>

namespace nnsc {

/// softmax(q K^T * scale + causal mask) in fp32, per sequence, over the K/V already in the
/// cache (store this step's K/V first). Positions a query may not see (later positions, keys
/// in `absent`, see PagedAttention.h, those outside a sliding `window` > 0) get probability
/// 0; a query that sees no key gets zeros.
///   q:        [num_tokens, num_heads, head_dim] (after RoPE)
///   kCache:   [num_blocks, block_size, num_kv_heads, head_dim]
///   returns   [num_tokens, num_heads, meta.maxSeqlenK] float32
torch::Tensor attentionPattern(const torch::Tensor &q, const torch::Tensor &kCache,
                               const AttentionMetadata &meta, double scale,
                               const torch::Tensor &absent = {}, int64_t window = 0);

/// pattern x V: the attention output for the probabilities `pattern` (as attentionPattern
/// made them, or as a trace rewrote them), accumulated in fp32.
///   pattern:  [num_tokens, num_heads, >= meta.maxSeqlenK] float32
///   vCache:   [num_blocks, block_size, num_kv_heads, head_dim]
///   returns   [num_tokens, num_heads, head_dim] in `dtype`
torch::Tensor applyAttentionPattern(const torch::Tensor &pattern, const torch::Tensor &vCache,
                                    const AttentionMetadata &meta, torch::ScalarType dtype);

} // namespace nnsc

#endif // NNSC_RUNTIME_ATTENTION_ATTENTIONPATTERN_H

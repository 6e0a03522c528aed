//===- PrefillAttentionCuda.h - varlen paged prefill in CUDA ----*- C++ -*-===//
//
// Device-pointer version of prefillAttention (nnsc/Runtime/Attention/PagedAttention.h), with
// the same layouts:
//   q, out:      [num_tokens, num_heads, head_dim]                contiguous
//   caches:      [num_blocks, block_size, num_kv_heads, head_dim] contiguous
//   cuSeqlensQ:  [num_seqs + 1] int32, cuSeqlensK: [num_seqs + 1] int32
//   blockTables: [num_seqs, max_blocks_per_seq] int32
// Sequence i's queries are rows [cuSeqlensQ[i], cuSeqlensQ[i + 1]), the last positions of its
// cuSeqlensK[i + 1] - cuSeqlensK[i] attended tokens (a cached prefix or earlier chunks come
// first), all already stored in the cache. The caller checks shapes; these only launch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_PREFILLATTENTIONCUDA_H
#define NNSC_RUNTIME_KERNELS_PREFILLATTENTIONCUDA_H

#include "nnsc/Runtime/Kernels/PagedAttentionCuda.h"

namespace nnsc::kernels {

/// Shapes of a prefill attention launch.
struct PrefillAttentionShape {
  int64_t numTokens;
  int64_t numSeqs;
  int64_t numHeads;
  int64_t numKvHeads;
  /// At most kMaxCudaHeadDim.
  int64_t headDim;
  int64_t blockSize;
  int64_t maxBlocksPerSeq;
  /// The most rows of one sequence (AttentionMetadata::maxSeqlenQ): the tiled kernels' grid.
  /// 0 when unknown, which takes the row kernel.
  int64_t maxQueryLen;
};

/// Causal varlen attention of every query row (GQA and `absent` as the decode kernel).
/// Returns cudaErrorInvalidValue for a head_dim above kMaxCudaHeadDim, heads not a multiple
/// of the KV heads or a negative maxQueryLen. A maxQueryLen below a sequence's row count
/// leaves that sequence's later rows unwritten: the LibTorch wrapper passes the metadata's.
cudaError_t prefillAttentionCuda(const float *q, const float *kCache, const float *vCache,
                                 const int32_t *cuSeqlensQ, const int32_t *cuSeqlensK,
                                 const int32_t *blockTables, const uint8_t *absent, float *out,
                                 const PrefillAttentionShape &shape, float scale,
                                 cudaStream_t stream);
cudaError_t prefillAttentionCuda(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                                 const __nv_bfloat16 *vCache, const int32_t *cuSeqlensQ,
                                 const int32_t *cuSeqlensK, const int32_t *blockTables,
                                 const uint8_t *absent, __nv_bfloat16 *out,
                                 const PrefillAttentionShape &shape, float scale,
                                 cudaStream_t stream);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_PREFILLATTENTIONCUDA_H

//===- PagedAttentionCuda.h - Paged KV store and decode in CUDA -*- C++ -*-===//
//
// Device-pointer versions of storeKVCache and decodeAttention (nnsc/Runtime/Attention/
// PagedAttention.h), with the same layouts:
//   key, value:  [num_tokens, num_kv_heads, head_dim]             contiguous
//   caches:      [num_blocks, block_size, num_kv_heads, head_dim] contiguous
//   q, out:      [num_seqs, num_heads, head_dim]                  contiguous
//   blockTables: [num_seqs, max_blocks_per_seq] int32
// The caller checks shapes (the LibTorch wrapper does); these only launch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_PAGEDATTENTIONCUDA_H
#define NNSC_RUNTIME_KERNELS_PAGEDATTENTIONCUDA_H

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace nnsc::kernels {

/// The largest head_dim the decode kernel supports.
constexpr int64_t kMaxCudaHeadDim = 256;

/// Copies row r of key/value into slot slotMapping[r] of the caches; negative slots skip.
cudaError_t storeKVCacheCuda(const float *key, const float *value, float *kCache, float *vCache,
                             const int64_t *slotMapping, int64_t numTokens, int64_t numKvHeads,
                             int64_t headDim, cudaStream_t stream);
cudaError_t storeKVCacheCuda(const __nv_bfloat16 *key, const __nv_bfloat16 *value,
                             __nv_bfloat16 *kCache, __nv_bfloat16 *vCache,
                             const int64_t *slotMapping, int64_t numTokens, int64_t numKvHeads,
                             int64_t headDim, cudaStream_t stream);

/// Shapes of a decode attention launch.
struct DecodeAttentionShape {
  int64_t numSeqs;
  int64_t numHeads;
  int64_t numKvHeads;
  /// At most kMaxCudaHeadDim.
  int64_t headDim;
  int64_t blockSize;
  int64_t maxBlocksPerSeq;
};

/// One query per sequence attending to its first contextLens[i] cached tokens (GQA: head h
/// reads KV head h / (numHeads / numKvHeads)), leaving out the slots `absent` marks (null, or
/// num_blocks * block_size bytes in device memory: a skipped layer's rows, which hold no K/V).
/// Returns cudaErrorInvalidValue for a head_dim above kMaxCudaHeadDim.
cudaError_t decodeAttentionCuda(const float *q, const float *kCache, const float *vCache,
                                const int32_t *contextLens, const int32_t *blockTables,
                                const uint8_t *absent, float *out,
                                const DecodeAttentionShape &shape, float scale,
                                cudaStream_t stream);
cudaError_t decodeAttentionCuda(const __nv_bfloat16 *q, const __nv_bfloat16 *kCache,
                                const __nv_bfloat16 *vCache, const int32_t *contextLens,
                                const int32_t *blockTables, const uint8_t *absent,
                                __nv_bfloat16 *out, const DecodeAttentionShape &shape, float scale,
                                cudaStream_t stream);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_PAGEDATTENTIONCUDA_H

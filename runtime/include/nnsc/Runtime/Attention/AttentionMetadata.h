//===- AttentionMetadata.h - Per-step paged attention context ---*- C++ -*-===//
//
// Everything the attention kernels need to know about one step's flat batch, passed
// explicitly to every attention call (never through a global, unlike nano-vllm's Context).
// Row r of the flat batch is one computed token; sequence i owns rows
// [cuSeqlensQ[i], cuSeqlensQ[i + 1]).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ATTENTION_ATTENTIONMETADATA_H
#define NNSC_RUNTIME_ATTENTION_ATTENTIONMETADATA_H

#include "nnsc/Runtime/Engine/Scheduler.h"

#include <torch/torch.h>

namespace nnsc {

/// The paged attention context of one step. All tensors live on the CPU.
struct AttentionMetadata {
  /// Prefill steps use the varlen kernel; decode steps the one-query-per-sequence kernel.
  bool isPrefill = false;
  /// Batch-invariant mode (a scheduled request asked for it, SamplingParams::batchInvariant):
  /// every row of the step is computed in an order that depends on that row and its own
  /// sequence's keys only (one attention kernel for every query, ProductOrder::RowInvariant
  /// for the products).
  bool batchInvariant = false;
  /// [num_seqs + 1] int32: prefix sums of the rows each sequence computes this step.
  torch::Tensor cuSeqlensQ;
  /// [num_seqs + 1] int32: prefix sums of each sequence's attended length (cached tokens plus
  /// this step's tokens); with prefix hits or chunks this exceeds the query length.
  torch::Tensor cuSeqlensK;
  int64_t maxSeqlenQ = 0;
  int64_t maxSeqlenK = 0;
  /// [num_tokens] int64: cache slot (block * block_size + offset) for each row's K/V.
  torch::Tensor slotMapping;
  /// [num_tokens] int64: each row's position in its sequence (for RoPE).
  torch::Tensor positions;
  /// [num_seqs] int32: tokens each sequence attends to (the decode kernel's context length).
  torch::Tensor contextLens;
  /// [num_seqs, max_blocks_per_seq] int32: physical block ids, padded with -1.
  torch::Tensor blockTables;
  /// [num_sampling_seqs] int64: the rows whose logits are sampled (the last row of each
  /// sequence that samples this step, in batch order, matching batch.samplingSeqs()).
  torch::Tensor sampleRows;

  /// Builds the context of `batch` (after Scheduler::schedule, before postprocess) for a
  /// cache of `blockSize`-token blocks.
  static AttentionMetadata fromBatch(const ScheduledBatch &batch, int64_t blockSize);
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ATTENTION_ATTENTIONMETADATA_H

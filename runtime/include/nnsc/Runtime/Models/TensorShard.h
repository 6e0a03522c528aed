//===- TensorShard.h - what one tensor-parallel rank holds ------*- C++ -*-===//
//
// Megatron-style sharding as vLLM does it: q/k/v and gate/up are column-parallel (split by
// attention heads and by intermediate channels), o_proj and down_proj row-parallel (their
// input columns split the same way, partial sums all-reduced), the embedding and lm_head
// vocab-parallel (rows split by token id). When there are fewer KV heads than ranks, each
// KV head is replicated on kvReplicas consecutive ranks. docs/Distributed.md.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_TENSORSHARD_H
#define NNSC_RUNTIME_MODELS_TENSORSHARD_H

#include "nnsc/Schema/ModelConfig.h"

#include <cstdint>

namespace nnsc {

/// The slice of a model one rank of `size` holds.
struct TensorShard {
  int rank = 0;
  int size = 1;
  /// This rank's attention heads [headBegin, headBegin + heads), KV heads
  /// [kvHeadBegin, kvHeadBegin + kvHeads), intermediate channels and vocabulary rows.
  int64_t headBegin = 0, heads = 0;
  int64_t kvHeadBegin = 0, kvHeads = 0;
  int64_t interBegin = 0, intermediate = 0;
  int64_t vocabBegin = 0, vocabCount = 0;
  /// Rows per rank of the vocabulary (the last rank may hold fewer; gathers pad to this).
  int64_t vocabPerRank = 0;
  /// Ranks that hold the same KV heads (1 unless the model has fewer KV heads than ranks).
  int64_t kvReplicas = 1;

  /// The whole model on one rank.
  static TensorShard whole(const schema::ModelConfig &config);
  /// Rank `rank`'s shard of `config` over `size` ranks. Throws InvalidInput naming
  /// the dimension when the model cannot be split that way (heads, KV heads or the
  /// intermediate size not divisible by `size`).
  static TensorShard of(const schema::ModelConfig &config, int rank, int size);

  bool isWhole() const { return size == 1; }
};

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_TENSORSHARD_H

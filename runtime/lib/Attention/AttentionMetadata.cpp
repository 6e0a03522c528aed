//===- AttentionMetadata.cpp - Per-step paged attention context -*- C++ -*-===//

#include "nnsc/Runtime/Attention/AttentionMetadata.h"

#include <algorithm>

namespace nnsc {

AttentionMetadata AttentionMetadata::fromBatch(const ScheduledBatch &batch, int64_t blockSize) {
  TORCH_CHECK(blockSize > 0, "attention metadata: block size must be positive, got ", blockSize);
  auto numSeqs = static_cast<int64_t>(batch.seqs.size());
  int64_t numTokens = batch.numTokens();
  size_t maxBlocks = 0;
  for (const Sequence *seq : batch.seqs)
    maxBlocks = std::max(maxBlocks, seq->blockTable.size());

  AttentionMetadata meta;
  meta.isPrefill = batch.isPrefill;
  auto i32 = torch::TensorOptions().dtype(torch::kInt32);
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  meta.cuSeqlensQ = torch::empty({numSeqs + 1}, i32);
  meta.cuSeqlensK = torch::empty({numSeqs + 1}, i32);
  meta.slotMapping = torch::empty({numTokens}, i64);
  meta.positions = torch::empty({numTokens}, i64);
  meta.contextLens = torch::empty({numSeqs}, i32);
  meta.blockTables = torch::full({numSeqs, static_cast<int64_t>(maxBlocks)}, -1, i32);
  std::vector<int64_t> sampleRows;

  auto *cuQ = meta.cuSeqlensQ.data_ptr<int32_t>();
  auto *cuK = meta.cuSeqlensK.data_ptr<int32_t>();
  auto *slots = meta.slotMapping.data_ptr<int64_t>();
  auto *positions = meta.positions.data_ptr<int64_t>();
  auto *contextLens = meta.contextLens.data_ptr<int32_t>();
  auto *tables = meta.blockTables.data_ptr<int32_t>();
  cuQ[0] = cuK[0] = 0;
  int64_t row = 0;
  for (int64_t i = 0; i < numSeqs; ++i) {
    const Sequence &seq = *batch.seqs[i];
    int64_t begin = seq.numCachedTokens;
    int64_t end = begin + seq.numScheduledTokens;
    TORCH_CHECK(static_cast<int64_t>(seq.blockTable.size()) * blockSize >= end,
                "attention metadata: sequence ", seq.id(), " has ", seq.blockTable.size(),
                " blocks of ", blockSize, " tokens, too few for ", end, " tokens");
    for (int64_t pos = begin; pos < end; ++pos, ++row) {
      slots[row] =
          static_cast<int64_t>(seq.blockTable[pos / blockSize]) * blockSize + pos % blockSize;
      positions[row] = pos;
    }
    if (seq.samplesThisStep())
      sampleRows.push_back(row - 1);
    meta.batchInvariant = meta.batchInvariant || seq.samplingParams().batchInvariant;
    cuQ[i + 1] = static_cast<int32_t>(row);
    cuK[i + 1] = static_cast<int32_t>(cuK[i] + end);
    contextLens[i] = static_cast<int32_t>(end);
    meta.maxSeqlenQ = std::max(meta.maxSeqlenQ, seq.numScheduledTokens);
    meta.maxSeqlenK = std::max(meta.maxSeqlenK, end);
    std::copy(seq.blockTable.begin(), seq.blockTable.end(),
              tables + i * static_cast<int64_t>(maxBlocks));
  }
  meta.sampleRows = torch::tensor(sampleRows, i64);
  return meta;
}

} // namespace nnsc

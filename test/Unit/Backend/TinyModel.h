//===- TinyModel.h - random tiny Llama weights for backend tests -*- C++ -*-===//

#ifndef NNSC_TEST_UNIT_BACKEND_TINYMODEL_H
#define NNSC_TEST_UNIT_BACKEND_TINYMODEL_H

#include "Support/RandomSource.h"

namespace nnsc::test {

/// A two-layer GQA Llama (4 query heads, 2 KV heads, head_dim 16, intermediate 96, vocabulary
/// 96) with seeded weights: the whole model, or `rank`'s shard of the same weights.
inline ModelWeights tinyWeights(torch::ScalarType dtype = torch::kFloat32, ShardRank rank = {}) {
  torch::manual_seed(0);
  schema::ModelConfig c;
  c.hidden = 64;
  c.intermediate = 96;
  c.layers = 2;
  c.heads = 4;
  c.kvHeads = 2;
  c.headDim = 16;
  c.vocab = 96;
  c.maxPositions = 256;
  RandomSource source;
  return assembleWeights(c, source, dtype, {}, ProjectionForms::Widened, rank);
}

} // namespace nnsc::test

#endif // NNSC_TEST_UNIT_BACKEND_TINYMODEL_H

//===- TensorShard.cpp - what one tensor-parallel rank holds ----*- C++ -*-===//

#include "nnsc/Runtime/Models/TensorShard.h"

#include "nnsc/Runtime/Support/Error.h"

#include <stdexcept>
#include <string>

namespace nnsc {

TensorShard TensorShard::whole(const schema::ModelConfig &c) {
  TensorShard s;
  s.heads = c.heads;
  s.kvHeads = c.kvHeads;
  s.intermediate = c.intermediate;
  s.vocabCount = s.vocabPerRank = c.vocab;
  return s;
}

TensorShard TensorShard::of(const schema::ModelConfig &c, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size)
    throw InvalidInput("tensor parallel rank " + std::to_string(rank) + " of a group of " +
                       std::to_string(size));
  if (size == 1)
    return whole(c);
  auto refuse = [&](const std::string &what, int64_t value) {
    throw InvalidInput("--tensor-parallel-size " + std::to_string(size) +
                       " does not divide the model's " + std::to_string(value) + " " + what +
                       "; each rank takes an equal share, so use a divisor of " +
                       std::to_string(value));
  };
  if (c.heads % size)
    refuse("attention heads", c.heads);
  if (c.intermediate % size)
    refuse("intermediate size", c.intermediate);
  if (c.kvHeads >= size ? c.kvHeads % size : size % c.kvHeads)
    throw InvalidInput(
        "--tensor-parallel-size " + std::to_string(size) + " and the model's " +
        std::to_string(c.kvHeads) +
        " KV heads: one must divide the other (KV heads are split, or replicated when there "
        "are fewer than ranks)");
  TensorShard s;
  s.rank = rank;
  s.size = size;
  s.heads = c.heads / size;
  s.headBegin = rank * s.heads;
  s.kvReplicas = c.kvHeads >= size ? 1 : size / c.kvHeads;
  s.kvHeads = c.kvHeads >= size ? c.kvHeads / size : 1;
  s.kvHeadBegin = c.kvHeads >= size ? rank * s.kvHeads : rank / s.kvReplicas;
  s.intermediate = c.intermediate / size;
  s.interBegin = rank * s.intermediate;
  s.vocabPerRank = (c.vocab + size - 1) / size;
  s.vocabBegin = std::min<int64_t>(rank * s.vocabPerRank, c.vocab);
  s.vocabCount = std::min<int64_t>(c.vocab - s.vocabBegin, s.vocabPerRank);
  return s;
}

} // namespace nnsc

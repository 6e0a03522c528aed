//===- CausalLMSharding.cpp - CausalLM's tensor parallel parts -*- C++ -*-====//
//
// What a rank does differently from a whole model (docs/Distributed.md): row-parallel
// projections' partial sums all-reduced, sharded site values gathered for the hooks and
// re-sharded after them, the vocab-parallel embedding and the gathered logits. With one rank
// each is the plain single-device operation.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Models/CausalLM.h"

#include "nnsc/Runtime/Layers/Linear.h"

#include <tuple>

namespace nnsc {

void CausalLM::reducePartial(torch::Tensor &partial) const {
  if (tp)
    timed(Phase::Communication, [&] { tp->allReduce(partial); });
}

void CausalLM::rowParallelAdd(torch::Tensor &x, const torch::Tensor &in,
                              const torch::Tensor &weight, const QuantizedMatrix &quant,
                              Phase phase) const {
  if (!tp) {
    timed(phase, [&] { nnsc::linearAdd(x, in, weight, quant); });
    return;
  }
  torch::Tensor partial = timed(phase, [&] { return nnsc::linear(in, weight, {}, quant); });
  reducePartial(partial);
  x.add_(partial);
}

torch::Tensor CausalLM::gatherShards(const torch::Tensor &shard, int64_t dim,
                                     ShardAxis axis) const {
  if (!tp)
    return shard;
  std::vector<torch::Tensor> parts =
      timed(Phase::Communication, [&] { return tp->allGather(shard); });
  // Ranks that hold the same replicated KV heads contribute them once.
  if (axis == ShardAxis::KVHeads && w.shard.kvReplicas > 1) {
    std::vector<torch::Tensor> distinct;
    for (size_t r = 0; r < parts.size(); r += size_t(w.shard.kvReplicas))
      distinct.push_back(parts[r]);
    parts.swap(distinct);
  }
  return torch::cat(parts, dim);
}

torch::Tensor CausalLM::shardOf(const torch::Tensor &value, int64_t dim, ShardAxis axis) const {
  if (!tp)
    return value;
  const TensorShard &s = w.shard;
  const auto [begin, count, whole] =
      axis == ShardAxis::Heads ? std::tuple{s.headBegin, s.heads, w.config.heads}
      : axis == ShardAxis::KVHeads
          ? std::tuple{s.kvHeadBegin, s.kvHeads, w.config.kvHeads}
          : std::tuple{s.interBegin, s.intermediate, w.config.intermediate};
  const int64_t unit = value.size(dim) / whole;
  return value.narrow(dim, begin * unit, count * unit).contiguous();
}

void CausalLM::fireSharded(const HookDispatch &hooks, int site, torch::Tensor &value, int64_t dim,
                           ShardAxis axis) const {
  if (site < 0 || !hooks.bound(site))
    return;
  torch::Tensor whole = tp ? gatherShards(value, dim, axis) : value.contiguous();
  hooks.fire(site, whole);
  value = tp ? shardOf(whole, dim, axis) : whole;
}

torch::Tensor CausalLM::embed(const torch::Tensor &tokens) const {
  if (!tp)
    return w.embed.defined() ? at::embedding(w.embed, tokens)
                             : w.embedQuant.selectRows(tokens).widen(w.dtype);
  const TensorShard &s = w.shard;
  torch::Tensor ids = tokens - s.vocabBegin;
  torch::Tensor other = (ids < 0) | (ids >= s.vocabCount);
  torch::Tensor x = at::embedding(w.embed, ids.clamp(0, s.vocabCount - 1));
  x.masked_fill_(other.unsqueeze(1), 0);
  reducePartial(x);
  return x;
}

torch::Tensor CausalLM::gatherLogits(const torch::Tensor &logits, bool everyRank) const {
  if (!tp)
    return logits;
  torch::Tensor padded = logits;
  if (logits.size(1) < w.shard.vocabPerRank) // the last rank's rows, fewer
    padded = at::constant_pad_nd(logits, {0, w.shard.vocabPerRank - logits.size(1)});
  std::vector<torch::Tensor> parts = timed(
      Phase::Communication, [&] { return everyRank ? tp->allGather(padded) : tp->gather(padded); });
  if (parts.empty())
    return logits.narrow(1, 0, 0);
  return torch::cat(parts, 1).narrow(1, 0, w.config.vocab);
}

} // namespace nnsc

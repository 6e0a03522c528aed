//===- Sequence.cpp - One request's tokens and KV bookkeeping ---*- C++ -*-===//

#include "nnsc/Runtime/Engine/Sequence.h"

#include "nnsc/Runtime/Support/Error.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace nnsc {

const char *finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return "none";
  case FinishReason::Length:
    return "length";
  case FinishReason::Abort:
    return "abort";
  case FinishReason::Stop:
  case FinishReason::Cut:
    return "stop";
  }
  return "stop";
}

Sequence::Sequence(int64_t id, std::vector<int32_t> promptTokenIds, SamplingParams sampling,
                   uint64_t cacheSalt)
    : seqId(id), tokens(std::move(promptTokenIds)), numPrompt(numTokens()),
      params(std::move(sampling)), salt(cacheSalt) {
  if (tokens.empty())
    throw InvalidInput("sequence " + std::to_string(id) + ": the prompt is empty");
  auto negative = std::find_if(tokens.begin(), tokens.end(), [](int32_t t) { return t < 0; });
  if (negative != tokens.end())
    throw InvalidInput("sequence " + std::to_string(id) + ": negative token id " +
                       std::to_string(*negative) + " at position " +
                       std::to_string(negative - tokens.begin()));
}

std::span<const int32_t> Sequence::blockTokens(int64_t index, int64_t blockSize) const {
  int64_t begin = index * blockSize;
  int64_t end = std::min(begin + blockSize, numTokens());
  return std::span<const int32_t>(tokens).subspan(begin, end - begin);
}

void Sequence::restartFromPrompt() {
  assert(blockTable.empty() && numCachedTokens == 0 && "restart a sequence without K/V only");
  tokens.resize(size_t(numPrompt));
  // Hashes of blocks past the prompt described the dropped tokens.
  blockHashes.clear();
  finishReason = FinishReason::None;
  endAfterStep = FinishReason::None;
  ++numRestarts;
}

} // namespace nnsc

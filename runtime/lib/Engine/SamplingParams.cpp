//===- SamplingParams.cpp - Sampling parameter validation -------*- C++ -*-===//

#include "nnsc/Runtime/Engine/SamplingParams.h"

#include "nnsc/Runtime/Support/Error.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace nnsc {

namespace {

[[noreturn]] void reject(const std::string &field, const std::string &rule,
                         const std::string &got) {
  throw InvalidInput("sampling params: '" + field + "' must be " + rule + ", got " + got);
}

} // namespace

void SamplingParams::validate() const {
  // NaN fails every comparison, so the checks are written to reject it.
  if (!(temperature >= 0.0f) || std::isinf(temperature))
    reject("temperature", ">= 0 and finite", std::to_string(temperature));
  if (!(topP > 0.0f && topP <= 1.0f))
    reject("top_p", "in (0, 1]", std::to_string(topP));
  if (topK < 0)
    reject("top_k", ">= 0 (0 disables it)", std::to_string(topK));
  if (maxTokens < 0)
    reject("max_tokens", ">= 0 (0: the prompt pass alone)", std::to_string(maxTokens));
  if (logprobs < -1 || logprobs > 20)
    reject("logprobs", "in [0, 20] (or -1 for none)", std::to_string(logprobs));
  for (int32_t id : stopTokenIds)
    if (id < 0)
      reject("stop_token_ids", "non-negative token ids", std::to_string(id));
}

} // namespace nnsc

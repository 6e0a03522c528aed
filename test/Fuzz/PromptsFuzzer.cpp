//===- PromptsFuzzer.cpp - fuzz nns-run's --prompts JSONL -----------------===//
//
// A prompts file from anywhere: every line a JSON object with a prompt or token ids and
// optional max_tokens and bundle. An accepted request is one nns-run can run: text or
// non-empty ids, every id a non-negative int32, max_tokens (if given) at least 0 (0: the
// prompt pass alone).
//
//===----------------------------------------------------------------------===//

#include "PromptsFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<nnsrun::Prompt> prompts;
  std::string error;
  if (!nnsrun::parsePromptsText(text, "prompts.jsonl", prompts, error))
    return 0;
  for (const nnsrun::Prompt &p : prompts) {
    if (!p.text && p.ids.empty())
      __builtin_trap();
    for (int32_t id : p.ids)
      if (id < 0)
        __builtin_trap();
    if (p.maxTokens && *p.maxTokens < 0)
      __builtin_trap();
  }
  return 0;
}

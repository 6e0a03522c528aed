//===- ChatTemplateFuzzer.cpp - fuzz chat-template recognition and rendering ===//
//
// The input is a chat template (from a tokenizer_config.json or GGUF metadata), then a NUL
// byte, then the conversation: messages separated by NUL, each "ROLE\x01CONTENT". A template
// that is recognized renders every conversation, with and without the generation prompt.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto [templateText, conversation] = nnsc::fuzz::splitAt(input, std::string_view("\0", 1));
  std::string error;
  std::unique_ptr<nnsc::tokenizer::ChatTemplate> chat =
      nnsc::tokenizer::ChatTemplate::create(templateText, error);
  if (!chat)
    return 0;
  std::vector<nnsc::tokenizer::ChatMessage> messages;
  while (!conversation.empty()) {
    auto [message, rest] = nnsc::fuzz::splitAt(conversation, std::string_view("\0", 1));
    auto [role, content] = nnsc::fuzz::splitAt(message, "\x01");
    messages.push_back({std::string(role), std::string(content)});
    conversation = rest;
  }
  (void)chat->render(messages, true);
  (void)chat->render(messages, false);
  return 0;
}

//===- ChatTemplate.h - The ChatML chat template of SmolLM2 -----*- C++ -*-===//
//
// Not a Jinja engine: the template text is recognized as the ChatML template SmolLM2-Instruct
// ships (with its default system prompt, read from the template) or its variant without a
// default system prompt, and rendered natively. Any other template is rejected with an error
// that says so, rather than rendered wrongly.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_CHATTEMPLATE_H
#define NNSC_RUNTIME_TOKENIZER_CHATTEMPLATE_H

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnsc::tokenizer {

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
public:
  /// Recognizes `templateText`; on failure returns null and explains why in `error`.
  static std::unique_ptr<ChatTemplate> create(std::string_view templateText, std::string &error);

  /// The prompt text `apply_chat_template(messages, tokenize=False,
  /// add_generation_prompt=addGenerationPrompt)` produces.
  std::string render(const std::vector<ChatMessage> &messages, bool addGenerationPrompt) const;

  /// The system prompt inserted when the conversation does not start with one.
  const std::optional<std::string> &defaultSystemPrompt() const { return defaultSystem; }

private:
  explicit ChatTemplate(std::optional<std::string> defaultSystem)
      : defaultSystem(std::move(defaultSystem)) {}

  std::optional<std::string> defaultSystem;
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_CHATTEMPLATE_H

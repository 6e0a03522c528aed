//===- ChatTemplate.cpp - The ChatML chat template of SmolLM2 -------------===//
//
// Recognition works on a canonical form of the template: whitespace and trim markers inside
// tags are dropped and every string literal is replaced by `$`, its decoded value kept aside.
// Two templates with the same canonical form and literal values render identically.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"

#include <cctype>

namespace nnsc::tokenizer {

namespace {
constexpr std::string_view ImStart = "<|im_start|>";
constexpr std::string_view ImEnd = "<|im_end|>";

/// Canonical text of the ChatML message loop, shared by both accepted forms.
constexpr std::string_view MessageLoop =
    "{{$+message[$]+$+message[$]+$+$}}{%endfor%}{%ifadd_generation_prompt%}{{$}}{%endif%}";
constexpr std::string_view WithDefaultSystem =
    "{%formessageinmessages%}{%ifloop.firstandmessages[0][$]!=$%}{{$}}{%endif%}";
constexpr std::string_view WithoutDefaultSystem = "{%formessageinmessages%}";

struct Canonical {
  std::string text;
  std::vector<std::string> literals;
};

/// Decodes the literal starting at `text[pos]` (a quote); returns the position after it.
std::optional<size_t> readLiteral(std::string_view text, size_t pos, std::string &value) {
  char quote = text[pos++];
  while (pos < text.size() && text[pos] != quote) {
    char c = text[pos++];
    if (c != '\\') {
      value.push_back(c);
      continue;
    }
    if (pos >= text.size())
      return std::nullopt;
    char e = text[pos++];
    switch (e) {
    case 'n':
      value.push_back('\n');
      break;
    case 't':
      value.push_back('\t');
      break;
    case 'r':
      value.push_back('\r');
      break;
    case '\\':
    case '\'':
    case '"':
      value.push_back(e);
      break;
    default:
      return std::nullopt;
    }
  }
  if (pos >= text.size())
    return std::nullopt;
  return pos + 1;
}

std::optional<Canonical> canonicalize(std::string_view text, std::string &error) {
  Canonical out;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, 2, "{%") != 0 && text.compare(pos, 2, "{{") != 0) {
      error = "text outside template tags at offset " + std::to_string(pos);
      return std::nullopt;
    }
    std::string_view close = text[pos + 1] == '%' ? "%}" : "}}";
    out.text += text.substr(pos, 2);
    pos += 2;
    while (true) {
      if (pos >= text.size()) {
        error = "unterminated tag";
        return std::nullopt;
      }
      char c = text[pos];
      // `-` next to a delimiter is Jinja's whitespace control; without text between tags it
      // has nothing to trim.
      if (c == '-' && (text.compare(pos + 1, 2, close) == 0 || out.text.back() == '{' ||
                       out.text.back() == '%')) {
        ++pos;
        continue;
      }
      if (text.compare(pos, 2, close) == 0) {
        out.text += close;
        pos += 2;
        break;
      }
      if (c == '\'' || c == '"') {
        std::string value;
        std::optional<size_t> next = readLiteral(text, pos, value);
        if (!next) {
          error = "malformed string literal at offset " + std::to_string(pos);
          return std::nullopt;
        }
        out.literals.push_back(std::move(value));
        out.text += '$';
        pos = *next;
        continue;
      }
      if (!std::isspace(static_cast<unsigned char>(c)))
        out.text += c;
      ++pos;
    }
  }
  return out;
}

bool literalsMatch(const std::vector<std::string> &actual, size_t from,
                   const std::vector<std::string> &expected) {
  if (actual.size() - from != expected.size())
    return false;
  for (size_t i = 0; i < expected.size(); ++i)
    if (actual[from + i] != expected[i])
      return false;
  return true;
}
} // namespace

std::unique_ptr<ChatTemplate> ChatTemplate::create(std::string_view templateText,
                                                   std::string &error) {
  auto unsupported = [&](const std::string &why) {
    error = "unsupported chat template (only the ChatML template of SmolLM2-Instruct is "
            "implemented): " +
            why;
    return nullptr;
  };
  if (templateText.empty())
    return unsupported("the model has no chat template");
  std::string why;
  std::optional<Canonical> canonical = canonicalize(templateText, why);
  if (!canonical)
    return unsupported(why);
  const std::vector<std::string> loopLiterals = {std::string(ImStart),
                                                 "role",
                                                 "\n",
                                                 "content",
                                                 std::string(ImEnd),
                                                 "\n",
                                                 std::string(ImStart) + "assistant\n"};
  const std::string &text = canonical->text;
  const std::vector<std::string> &literals = canonical->literals;

  if (text == std::string(WithoutDefaultSystem) + std::string(MessageLoop) &&
      literalsMatch(literals, 0, loopLiterals))
    return std::unique_ptr<ChatTemplate>(new ChatTemplate(std::nullopt));

  if (text == std::string(WithDefaultSystem) + std::string(MessageLoop) &&
      literals.size() == 3 + loopLiterals.size() && literals[0] == "role" &&
      literals[1] == "system" && literalsMatch(literals, 3, loopLiterals)) {
    const std::string &block = literals[2];
    std::string head = std::string(ImStart) + "system\n";
    std::string tail = std::string(ImEnd) + "\n";
    if (block.size() >= head.size() + tail.size() && block.compare(0, head.size(), head) == 0 &&
        block.compare(block.size() - tail.size(), tail.size(), tail) == 0)
      return std::unique_ptr<ChatTemplate>(
          new ChatTemplate(block.substr(head.size(), block.size() - head.size() - tail.size())));
  }
  return unsupported("the template does not have the ChatML structure");
}

std::string ChatTemplate::render(const std::vector<ChatMessage> &messages,
                                 bool addGenerationPrompt) const {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && defaultSystem && messages[0].role != "system") {
      out += ImStart;
      out += "system\n" + *defaultSystem;
      out += ImEnd;
      out += "\n";
    }
    out += ImStart;
    out += messages[i].role + "\n" + messages[i].content;
    out += ImEnd;
    out += "\n";
  }
  if (addGenerationPrompt) {
    out += ImStart;
    out += "assistant\n";
  }
  return out;
}

} // namespace nnsc::tokenizer

//===- Decoder.cpp - Token strings back to text ---------------------------===//

#include "nnsc/Runtime/Tokenizer/Decoder.h"

#include "nnsc/Runtime/Tokenizer/ByteLevel.h"
#include "nnsc/Runtime/Tokenizer/Normalizer.h"
#include "nnsc/Runtime/Tokenizer/Unicode.h"

#include <optional>

namespace nnsc::tokenizer {

namespace {
constexpr std::string_view ReplacementChar = "\xEF\xBF\xBD";

std::optional<uint8_t> parseByteToken(const std::string &token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
    return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  int hi = hex(token[3]), lo = hex(token[4]);
  if (hi < 0 || lo < 0)
    return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

std::vector<std::string> byteFallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  std::string bytes;
  auto flush = [&] {
    if (bytes.empty())
      return;
    if (isValidUtf8(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t i = 0; i < bytes.size(); ++i)
        out.emplace_back(ReplacementChar);
    }
    bytes.clear();
  };
  for (std::string &token : tokens) {
    if (std::optional<uint8_t> b = parseByteToken(token)) {
      bytes.push_back(static_cast<char>(*b));
      continue;
    }
    flush();
    out.push_back(std::move(token));
  }
  flush();
  return out;
}

/// Removes up to `count` copies of the character `content` from the start (or end) of
/// `token`.
void strip(std::string &token, const std::string &content, size_t start, size_t stop) {
  for (size_t i = 0; i < start && token.compare(0, content.size(), content) == 0; ++i)
    token.erase(0, content.size());
  for (size_t i = 0; i < stop && token.size() >= content.size() &&
                     token.compare(token.size() - content.size(), content.size(), content) == 0;
       ++i)
    token.erase(token.size() - content.size());
}
} // namespace

void Decoder::addByteLevel() { steps.push_back({Kind::ByteLevel}); }

void Decoder::addMetaspace(std::string replacement, PrependScheme scheme) {
  Step step{Kind::Metaspace};
  step.pattern = std::move(replacement);
  step.dropFirst = scheme != PrependScheme::Never;
  steps.push_back(step);
}

void Decoder::addReplace(std::string pattern, std::string content) {
  Step step{Kind::Replace};
  step.pattern = std::move(pattern);
  step.content = std::move(content);
  steps.push_back(step);
}

void Decoder::addByteFallback() { steps.push_back({Kind::ByteFallback}); }

void Decoder::addFuse() { steps.push_back({Kind::Fuse}); }

void Decoder::addStrip(std::string content, size_t start, size_t stop) {
  Step step{Kind::Strip};
  step.content = std::move(content);
  step.start = start;
  step.stop = stop;
  steps.push_back(step);
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  if (steps.empty()) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i)
      out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const Step &step : steps) {
    switch (step.kind) {
    case Kind::ByteLevel: {
      std::string bytes;
      for (const std::string &token : tokens)
        appendByteLevelDecoded(token, bytes);
      tokens = {toValidUtf8Lossy(bytes)};
      break;
    }
    case Kind::Metaspace:
      for (size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = replaceAll(tokens[i], step.pattern, i == 0 && step.dropFirst ? "" : " ");
      break;
    case Kind::Replace:
      for (std::string &token : tokens)
        token = replaceAll(token, step.pattern, step.content);
      break;
    case Kind::ByteFallback:
      tokens = byteFallback(std::move(tokens));
      break;
    case Kind::Fuse: {
      std::string all;
      for (const std::string &token : tokens)
        all += token;
      tokens = {all};
      break;
    }
    case Kind::Strip:
      for (std::string &token : tokens)
        strip(token, step.content, step.start, step.stop);
      break;
    }
  }
  std::string out;
  for (const std::string &token : tokens)
    out += token;
  return out;
}

} // namespace nnsc::tokenizer

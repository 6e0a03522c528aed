//===- SplitPattern.cpp - The pre-tokenization regexes of known models ----===//

#include "nnsc/Runtime/Tokenizer/SplitPattern.h"

#include "nnsc/Runtime/Tokenizer/Unicode.h"

namespace nnsc::tokenizer {

namespace {
constexpr std::string_view GPT2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view Llama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view Qwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// The text decoded once into code points; positions below are indices into `cps`.
class Chars {
public:
  explicit Chars(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
      DecodedChar c = decodeUtf8(text, pos);
      cps.push_back(c.cp);
      offsets.push_back(pos);
      pos += c.length;
    }
    offsets.push_back(text.size());
  }

  size_t size() const { return cps.size(); }
  /// The code point at `i`, or 0 past the end (0 is in none of the classes tested there).
  uint32_t at(size_t i) const { return i < cps.size() ? cps[i] : 0; }
  bool has(size_t i) const { return i < cps.size(); }
  bool letter(size_t i) const { return has(i) && isLetter(cps[i]); }
  bool number(size_t i) const { return has(i) && isNumber(cps[i]); }
  bool space(size_t i) const { return has(i) && isWhitespace(cps[i]); }
  /// [^\s\p{L}\p{N}]
  bool other(size_t i) const { return has(i) && !space(i) && !letter(i) && !number(i); }
  bool newline(size_t i) const { return has(i) && (cps[i] == '\r' || cps[i] == '\n'); }
  size_t byteOffset(size_t i) const { return offsets[i]; }

private:
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;
};

/// Length of 's|'t|'re|'ve|'m|'ll|'d at `i` (0 if none), optionally ignoring case the way
/// Oniguruma folds it (which also lets U+017F LATIN SMALL LETTER LONG S match 's').
size_t matchContraction(const Chars &c, size_t i, bool ignoreCase) {
  if (c.at(i) != '\'')
    return 0;
  auto is = [&](size_t j, char lower) {
    uint32_t cp = c.at(j);
    if (cp == static_cast<uint32_t>(lower))
      return true;
    if (!ignoreCase)
      return false;
    if (cp == static_cast<uint32_t>(lower - 'a' + 'A'))
      return true;
    return lower == 's' && cp == 0x17F;
  };
  if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd'))
    return 2;
  if ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) ||
      (is(i + 1, 'l') && is(i + 2, 'l')))
    return 3;
  return 0;
}

/// \s+(?!\S)|\s+ at `i`, which must be whitespace: a run followed by more text gives back its
/// last character so that it can prefix the next word, unless that would leave nothing.
size_t matchTrailingSpaces(const Chars &c, size_t i) {
  size_t j = i;
  while (c.space(j))
    ++j;
  if (j == c.size() || j - i == 1)
    return j - i;
  return j - i - 1;
}

size_t matchGPT2(const Chars &c, size_t i) {
  if (size_t n = matchContraction(c, i, /*ignoreCase=*/false))
    return n;
  size_t start = c.at(i) == ' ' ? i + 1 : i;
  size_t j = start;
  if (c.letter(start)) {
    while (c.letter(j))
      ++j;
    return j - i;
  }
  if (c.number(start)) {
    while (c.number(j))
      ++j;
    return j - i;
  }
  if (c.other(start)) {
    while (c.other(j))
      ++j;
    return j - i;
  }
  return matchTrailingSpaces(c, i);
}

size_t matchLlama3(const Chars &c, size_t i, size_t maxDigits) {
  if (size_t n = matchContraction(c, i, /*ignoreCase=*/true))
    return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t start = (c.letter(i) || c.number(i) || c.newline(i)) ? i : i + 1;
  if (c.letter(start)) {
    size_t j = start;
    while (c.letter(j))
      ++j;
    return j - i;
  }
  if (c.number(i)) {
    size_t j = i;
    while (c.number(j) && j - i < maxDigits)
      ++j;
    return j - i;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  start = c.at(i) == ' ' ? i + 1 : i;
  if (c.other(start)) {
    size_t j = start;
    while (c.other(j))
      ++j;
    while (c.newline(j))
      ++j;
    return j - i;
  }
  // `\s*[\r\n]+`: whitespace up to and including the last line break of the run.
  size_t j = i;
  size_t lastNewline = 0;
  bool sawNewline = false;
  while (c.space(j)) {
    if (c.newline(j)) {
      lastNewline = j;
      sawNewline = true;
    }
    ++j;
  }
  if (sawNewline)
    return lastNewline + 1 - i;
  return matchTrailingSpaces(c, i);
}
} // namespace

std::optional<SplitPattern> recognizeSplitPattern(std::string_view regex) {
  if (regex == GPT2Regex)
    return SplitPattern::GPT2;
  if (regex == Llama3Regex)
    return SplitPattern::Llama3;
  if (regex == Qwen2Regex)
    return SplitPattern::Qwen2;
  return std::nullopt;
}

std::string_view splitPatternRegex(SplitPattern pattern) {
  switch (pattern) {
  case SplitPattern::GPT2:
    return GPT2Regex;
  case SplitPattern::Llama3:
    return Llama3Regex;
  case SplitPattern::Qwen2:
    return Qwen2Regex;
  }
  return {};
}

std::vector<std::pair<size_t, size_t>> findSplitMatches(SplitPattern pattern,
                                                        std::string_view text) {
  Chars chars(text);
  std::vector<std::pair<size_t, size_t>> matches;
  for (size_t i = 0; i < chars.size();) {
    size_t n = 0;
    switch (pattern) {
    case SplitPattern::GPT2:
      n = matchGPT2(chars, i);
      break;
    case SplitPattern::Llama3:
      n = matchLlama3(chars, i, 3);
      break;
    case SplitPattern::Qwen2:
      n = matchLlama3(chars, i, 1);
      break;
    }
    // Every character belongs to one of the classes above, so n > 0; a zero would mean the
    // regex left a gap, which `Isolated` splitting keeps as its own piece.
    if (n == 0) {
      ++i;
      continue;
    }
    matches.emplace_back(chars.byteOffset(i), chars.byteOffset(i + n));
    i += n;
  }
  return matches;
}

} // namespace nnsc::tokenizer

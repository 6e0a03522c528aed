//===- StreamingDecoder.cpp - Incremental detokenization ------------------===//

#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

namespace nnsc::tokenizer {

namespace {
bool endsWithReplacement(const std::string &text) {
  return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

/// The length of the common prefix of `a` and `b`, backed off to a character boundary of
/// `b`.
size_t commonPrefix(const std::string &a, const std::string &b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  while (n > 0 && n < b.size() && (static_cast<unsigned char>(b[n]) & 0xC0) == 0x80)
    --n;
  return n;
}
} // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer &tokenizer, bool skipSpecial)
    : tokenizer(tokenizer), skipSpecial(skipSpecial) {}

std::string StreamingDecoder::step(int32_t id) {
  ids.push_back(id);
  std::string text = tokenizer.decode(ids, skipSpecial);
  if (text.size() <= prefix.size() || endsWithReplacement(text))
    return {};
  // The window's text normally extends the previous one; should a decoder ever rewrite
  // earlier text, emit from where they diverge rather than cut a character.
  std::string added = text.substr(commonPrefix(prefix, text));
  size_t newPrefixIndex = ids.size() - prefixIndex;
  ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prefixIndex));
  prefix = tokenizer.decode(ids, skipSpecial);
  prefixIndex = newPrefixIndex;
  return added;
}

std::string StreamingDecoder::flush() {
  std::string text = tokenizer.decode(ids, skipSpecial);
  std::string rest = text.size() > prefix.size() ? text.substr(commonPrefix(prefix, text)) : "";
  ids.clear();
  prefix.clear();
  prefixIndex = 0;
  return rest;
}

} // namespace nnsc::tokenizer

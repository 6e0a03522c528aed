//===- Unicode.cpp - Code point classes and UTF-8 helpers -----------------===//

#include "nnsc/Runtime/Tokenizer/Unicode.h"

#include <algorithm>
#include <iterator>

namespace nnsc::tokenizer {

namespace {
struct CategoryRange {
  uint32_t first;
  uint8_t category;
};
#include "UnicodeTables.inc"

/// Valid range of the second byte of a sequence led by `lead` (Unicode Table 3-7), which is
/// what excludes overlong forms and surrogates.
void secondByteRange(unsigned char lead, unsigned char &lo, unsigned char &hi) {
  lo = 0x80;
  hi = 0xBF;
  if (lead == 0xE0)
    lo = 0xA0;
  else if (lead == 0xED)
    hi = 0x9F;
  else if (lead == 0xF0)
    lo = 0x90;
  else if (lead == 0xF4)
    hi = 0x8F;
}
} // namespace

Category category(uint32_t cp) {
  if (cp > 0x10FFFF)
    return Category::Cn;
  auto it = std::upper_bound(std::begin(CategoryRanges), std::end(CategoryRanges), cp,
                             [](uint32_t v, const CategoryRange &r) { return v < r.first; });
  return static_cast<Category>(std::prev(it)->category);
}

bool isLetter(uint32_t cp) {
  Category c = category(cp);
  return c >= Category::Lu && c <= Category::Lo;
}

bool isNumber(uint32_t cp) {
  Category c = category(cp);
  return c >= Category::Nd && c <= Category::No;
}

bool isWhitespace(uint32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85)
    return true;
  if (cp < 0x80)
    return false;
  Category c = category(cp);
  return c == Category::Zs || c == Category::Zl || c == Category::Zp;
}

DecodedChar decodeUtf8(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  if (lead < 0x80)
    return {lead, 1};
  uint32_t need;
  uint32_t cp;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    cp = lead & 0x07;
  } else {
    return {InvalidCodePoint, 1};
  }
  unsigned char lo, hi;
  secondByteRange(lead, lo, hi);
  for (uint32_t i = 1; i <= need; ++i) {
    if (pos + i >= text.size())
      return {InvalidCodePoint, i};
    unsigned char b = byte(pos + i);
    if (b < lo || b > hi)
      return {InvalidCodePoint, i};
    cp = (cp << 6) | (b & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  return {cp, need + 1};
}

void appendUtf8(uint32_t cp, std::string &out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t completeUtf8Prefix(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    DecodedChar c = decodeUtf8(bytes, pos);
    // A valid lead byte whose sequence is cut by the end of the buffer may still be completed
    // by later bytes.
    unsigned char lead = static_cast<unsigned char>(bytes[pos]);
    if (c.cp == InvalidCodePoint && pos + c.length == bytes.size() && lead >= 0xC2 && lead <= 0xF4)
      return pos;
    pos += c.length;
  }
  return pos;
}

std::string toValidUtf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    DecodedChar c = decodeUtf8(bytes, pos);
    if (c.cp == InvalidCodePoint)
      out += "\xEF\xBF\xBD";
    else
      out.append(bytes.substr(pos, c.length));
    pos += c.length;
  }
  return out;
}

bool isValidUtf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    DecodedChar c = decodeUtf8(bytes, pos);
    if (c.cp == InvalidCodePoint)
      return false;
    pos += c.length;
  }
  return true;
}

} // namespace nnsc::tokenizer

//===- ByteLevel.cpp - GPT-2 byte <-> printable character map -------------===//

#include "nnsc/Runtime/Tokenizer/ByteLevel.h"

#include "nnsc/Runtime/Tokenizer/Unicode.h"

#include <array>

namespace nnsc::tokenizer {

namespace {
/// GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100...
struct ByteTable {
  std::array<uint32_t, 256> toCodePoint{};
  /// Inverse over U+0000..U+0143, the only range the map reaches; -1 if unmapped.
  std::array<int16_t, 0x144> toByte{};

  ByteTable() {
    toByte.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : next++;
      toCodePoint[b] = cp;
      toByte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteTable &table() {
  static const ByteTable t;
  return t;
}
} // namespace

uint32_t byteToCodePoint(uint8_t byte) { return table().toCodePoint[byte]; }

std::optional<uint8_t> codePointToByte(uint32_t cp) {
  if (cp >= table().toByte.size() || table().toByte[cp] < 0)
    return std::nullopt;
  return static_cast<uint8_t>(table().toByte[cp]);
}

std::string byteLevelEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes)
    appendUtf8(byteToCodePoint(static_cast<uint8_t>(c)), out);
  return out;
}

void appendByteLevelDecoded(std::string_view token, std::string &out) {
  size_t start = out.size();
  for (size_t pos = 0; pos < token.size();) {
    DecodedChar c = decodeUtf8(token, pos);
    std::optional<uint8_t> b = codePointToByte(c.cp);
    if (!b) {
      out.resize(start);
      out.append(token);
      return;
    }
    out.push_back(static_cast<char>(*b));
    pos += c.length;
  }
}

} // namespace nnsc::tokenizer

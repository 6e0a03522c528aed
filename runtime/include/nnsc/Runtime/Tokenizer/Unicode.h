//===- Unicode.h - Code point classes and UTF-8 helpers ---------*- C++ -*-===//
//
// The few Unicode facts the tokenizers need: the general category of a code point (tables
// generated at build time from Python's `unicodedata`) and UTF-8 decoding that never fails, so
// that arbitrary bytes can still be byte-level tokenized.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_UNICODE_H
#define NNSC_RUNTIME_TOKENIZER_UNICODE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nnsc::tokenizer {

/// Unicode general categories, in the order of the generated table.
enum class Category : uint8_t {
  Cn,
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co,
};

/// The general category of `cp` (Cn for values outside the code space).
Category category(uint32_t cp);

/// `\p{L}`.
bool isLetter(uint32_t cp);
/// `\p{N}`, which is also Rust's `char::is_numeric`.
bool isNumber(uint32_t cp);
/// `\s` of Oniguruma and Rust's `char::is_whitespace`: U+0009..U+000D, U+0085 and Z*.
bool isWhitespace(uint32_t cp);

/// One decoded code point and how many bytes it took.
struct DecodedChar {
  uint32_t cp;
  uint32_t length;
};

/// Code point returned for a byte that does not start a valid UTF-8 sequence; such a byte is
/// consumed alone, so that no input is ever dropped.
inline constexpr uint32_t InvalidCodePoint = 0xFFFFFFFF;

/// Decodes the character starting at `text[pos]` (`pos < text.size()`).
DecodedChar decodeUtf8(std::string_view text, size_t pos);

/// Appends the UTF-8 encoding of `cp`.
void appendUtf8(uint32_t cp, std::string &out);

/// Length of the longest prefix of `bytes` that ends on a character boundary, treating only a
/// truncated multi-byte sequence at the very end as incomplete.
size_t completeUtf8Prefix(std::string_view bytes);

/// Replaces every invalid UTF-8 sequence by U+FFFD the way Rust's `String::from_utf8_lossy`
/// does (one replacement per maximal invalid subpart).
std::string toValidUtf8Lossy(std::string_view bytes);

/// True if `bytes` is entirely valid UTF-8.
bool isValidUtf8(std::string_view bytes);

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_UNICODE_H

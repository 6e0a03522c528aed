//===- ByteLevel.h - GPT-2 byte <-> printable character map -----*- C++ -*-===//
//
// Byte-level BPE never sees raw bytes: every byte is first mapped to a printable code point
// (GPT-2's `bytes_to_unicode`), so that the vocabulary is plain text.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_BYTELEVEL_H
#define NNSC_RUNTIME_TOKENIZER_BYTELEVEL_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nnsc::tokenizer {

/// The code point standing for `byte`.
uint32_t byteToCodePoint(uint8_t byte);

/// The byte a code point stands for, or nullopt if it is not one of the 256 mapped ones.
std::optional<uint8_t> codePointToByte(uint32_t cp);

/// Maps every byte of `bytes` to its character, UTF-8 encoded.
std::string byteLevelEncode(std::string_view bytes);

/// Appends the bytes a byte-level token stands for. As in `tokenizers`, a token holding any
/// character outside the map (an added token such as "<|im_start|> x") contributes its own
/// UTF-8 bytes unchanged.
void appendByteLevelDecoded(std::string_view token, std::string &out);

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_BYTELEVEL_H

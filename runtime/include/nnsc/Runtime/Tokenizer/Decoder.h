//===- Decoder.h - Token strings back to text ---------------------*- C++ -*-===//
//
// The `tokenizers` decoder chain: each step rewrites the list of token strings, and the
// result is their concatenation. Byte-level and byte-fallback steps turn invalid UTF-8 into
// U+FFFD exactly as the Rust code does.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_DECODER_H
#define NNSC_RUNTIME_TOKENIZER_DECODER_H

#include "nnsc/Runtime/Tokenizer/PreTokenizer.h"

#include <string>
#include <vector>

namespace nnsc::tokenizer {

class Decoder {
public:
  /// `ByteLevel`: all tokens concatenated, characters mapped back to bytes, lossy UTF-8.
  void addByteLevel();
  /// `Metaspace`: `replacement` becomes a space, and is dropped from the first token unless
  /// the scheme is `Never`.
  void addMetaspace(std::string replacement, PrependScheme scheme);
  /// `Replace` with a literal pattern, on every token.
  void addReplace(std::string pattern, std::string content);
  /// `ByteFallback`: runs of `<0xXX>` tokens become their UTF-8 text, or one U+FFFD per byte
  /// if the run is not valid UTF-8.
  void addByteFallback();
  /// `Fuse`: all tokens joined into one.
  void addFuse();
  /// `Strip`: up to `start` leading and `stop` trailing `content` characters removed from
  /// every token.
  void addStrip(std::string content, size_t start, size_t stop);

  /// Without any step the tokens are joined by spaces, as `tokenizers` does.
  std::string decode(std::vector<std::string> tokens) const;

private:
  enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip };
  struct Step {
    Kind kind;
    std::string pattern;
    std::string content;
    bool dropFirst = false;
    size_t start = 0;
    size_t stop = 0;
  };
  std::vector<Step> steps;
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_DECODER_H

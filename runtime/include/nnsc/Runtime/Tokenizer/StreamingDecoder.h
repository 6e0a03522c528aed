//===- StreamingDecoder.h - Incremental detokenization ----------*- C++ -*-===//
//
// Turns generated ids into text one id at a time, emitting only complete characters: a
// character split across byte tokens is held back until its last byte arrives. The algorithm
// is that of `tokenizers`' DecodeStream (decode a short window of recent ids, emit what was
// added past the previous decode unless it ends in U+FFFD), so the concatenated output equals
// `decode(allIds)` for every decoder we support.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_STREAMINGDECODER_H
#define NNSC_RUNTIME_TOKENIZER_STREAMINGDECODER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nnsc::tokenizer {

class Tokenizer;

class StreamingDecoder {
public:
  StreamingDecoder(const Tokenizer &tokenizer, bool skipSpecial);

  /// Feeds one id; returns the text that became complete (possibly empty).
  std::string step(int32_t id);
  /// Returns whatever is still held back (an incomplete character decodes to U+FFFD), and
  /// starts over.
  std::string flush();

private:
  const Tokenizer &tokenizer;
  bool skipSpecial;
  /// Recent ids: those decoded into `prefix` and those after them.
  std::vector<int32_t> ids;
  std::string prefix;
  /// How many of `ids` make up `prefix`.
  size_t prefixIndex = 0;
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_STREAMINGDECODER_H

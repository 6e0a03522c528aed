//===- Tokenizer.h - Hugging Face compatible BPE tokenizer ------*- C++ -*-===//
//
// Text <-> token ids, matching Hugging Face `tokenizers` exactly for byte-level BPE (GPT-2,
// Llama 3, Qwen2, SmolLM2) and SentencePiece-style BPE with byte fallback (Llama 2,
// Mistral). Built from a `tokenizer.json` or from GGUF metadata; see docs/Tokenizer.md.
//
// encode: added tokens are cut out of the raw text first; every segment in between is
// normalized, pre-tokenized into words, and each word is BPE-encoded; then the post-processor
// adds BOS/EOS if asked. decode: ids -> token strings -> the decoder chain.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_TOKENIZER_H
#define NNSC_RUNTIME_TOKENIZER_TOKENIZER_H

#include "nnsc/Runtime/Tokenizer/AddedVocabulary.h"
#include "nnsc/Runtime/Tokenizer/BPEModel.h"
#include "nnsc/Runtime/Tokenizer/Decoder.h"
#include "nnsc/Runtime/Tokenizer/Normalizer.h"
#include "nnsc/Runtime/Tokenizer/PreTokenizer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnsc::gguf {
class GGUFFile;
} // namespace nnsc::gguf

namespace nnsc::tokenizer {

/// Token ids a model gives a meaning to, where known.
struct SpecialTokenIds {
  std::optional<int32_t> bos;
  std::optional<int32_t> eos;
  std::optional<int32_t> unk;
  std::optional<int32_t> pad;
};

/// The pieces a loader assembles into a tokenizer.
struct TokenizerParts {
  Normalizer normalizer;
  PreTokenizer preTokenizer;
  std::unique_ptr<BPEModel> model;
  AddedVocabulary addedVocabulary;
  Decoder decoder;
  /// Ids the post-processor puts around the sequence when special tokens are requested.
  std::vector<int32_t> prefixIds;
  std::vector<int32_t> suffixIds;
  SpecialTokenIds specialIds;
  /// The Jinja chat template shipped with the model, empty if none.
  std::string chatTemplate;
};

class Tokenizer {
public:
  explicit Tokenizer(TokenizerParts parts);

  /// Loads a `tokenizer.json`. If a `tokenizer_config.json` sits next to it, the BOS/EOS/
  /// UNK/PAD tokens and the chat template are taken from there (a `chat_template.jinja`
  /// beside it overrides the template). On failure returns null and
  /// sets `error` to what is wrong (unreadable file, malformed JSON, missing field, or a
  /// component we do not implement, named).
  static std::unique_ptr<Tokenizer> fromJsonFile(const std::string &path, std::string &error);
  /// Same from the text of a `tokenizer.json` (and optionally of a `tokenizer_config.json`).
  static std::unique_ptr<Tokenizer> fromJsonText(std::string_view tokenizerJson,
                                                 std::string_view configJson, std::string &error);
  /// Builds the tokenizer described by the `tokenizer.ggml.*` metadata of a GGUF file.
  static std::unique_ptr<Tokenizer> fromGGUF(const gguf::GGUFFile &file, std::string &error);

  /// Token ids of `text`; with `addSpecial` the post-processor's BOS/EOS are added.
  std::vector<int32_t> encode(std::string_view text, bool addSpecial) const;
  /// Text of `ids`; with `skipSpecial` special added tokens are left out. Ids outside the
  /// vocabulary are skipped, as `tokenizers` does.
  std::string decode(const std::vector<int32_t> &ids, bool skipSpecial) const;

  /// The token string of `id` (added tokens first), or nullopt if no token has it.
  std::optional<std::string> idToToken(int32_t id) const;
  /// The id of a token string (added tokens first).
  std::optional<int32_t> tokenToId(std::string_view token) const;
  /// True for added tokens marked special.
  bool isSpecial(int32_t id) const;
  /// One past the largest id of the model and added vocabularies.
  size_t vocabSize() const;

  const SpecialTokenIds &specialIds() const { return parts.specialIds; }
  const std::string &chatTemplate() const { return parts.chatTemplate; }

private:
  /// Appends the ids of one segment of text between added tokens.
  void encodeSegment(std::string_view text, bool atStart, std::vector<int32_t> &out) const;

  TokenizerParts parts;
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_TOKENIZER_H

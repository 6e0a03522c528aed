//===- AddedVocabulary.h - Tokens matched before pre-tokenization -*- C++ -*-===//
//
// Added tokens (`<|im_start|>`, `<s>`, ...) are found in the raw text first, leftmost and
// longest, and never reach the normalizer, pre-tokenizer or model. Tokens marked `normalized`
// are instead searched in the normalized text of the segments in between, as `tokenizers`
// does.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_ADDEDVOCABULARY_H
#define NNSC_RUNTIME_TOKENIZER_ADDEDVOCABULARY_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nnsc::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id;
  /// Skipped by `decode(..., skipSpecial=true)`.
  bool special = true;
  /// Matched in normalized text rather than raw text.
  bool normalized = false;
  /// Absorb the whitespace to the left / right of a match.
  bool lstrip = false;
  bool rstrip = false;
};

/// A run of text between added tokens, or one added token (`id >= 0`).
struct Segment {
  std::string_view text;
  int32_t id;
  /// Byte offset of `text` in the string that was split.
  size_t offset;
};

class AddedVocabulary {
public:
  AddedVocabulary();
  ~AddedVocabulary();
  AddedVocabulary(AddedVocabulary &&) noexcept;
  AddedVocabulary &operator=(AddedVocabulary &&) noexcept;

  /// Adds `token`; returns false (and leaves the vocabulary unchanged) if its content is empty
  /// or already added with another id.
  bool add(const AddedToken &token);

  /// Splits `text` at the added tokens with `normalized == matchNormalized`.
  std::vector<Segment> split(std::string_view text, bool matchNormalized) const;

  const AddedToken *findById(int32_t id) const;
  const AddedToken *findByContent(std::string_view content) const;
  bool hasNormalized() const { return numNormalized > 0; }
  /// The largest added id, or -1 if there are none.
  int32_t maxId() const { return largestId; }

private:
  struct TrieNode;
  std::vector<Segment> splitWith(const TrieNode &root, std::string_view text) const;

  std::vector<AddedToken> tokens;
  std::unordered_map<int32_t, size_t> byId;
  std::map<std::string, size_t, std::less<>> byContent;
  std::unique_ptr<TrieNode> rawTrie;
  std::unique_ptr<TrieNode> normalizedTrie;
  size_t numNormalized = 0;
  int32_t largestId = -1;
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_ADDEDVOCABULARY_H

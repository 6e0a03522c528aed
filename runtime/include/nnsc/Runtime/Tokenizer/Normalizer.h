//===- Normalizer.h - Text rewriting before pre-tokenization ----*- C++ -*-===//
//
// The normalizers SentencePiece-style tokenizer.json files use (Llama 2, Mistral): Prepend
// and Replace with a literal pattern. Unicode normal forms are not implemented; a tokenizer
// asking for one is rejected at load time.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_NORMALIZER_H
#define NNSC_RUNTIME_TOKENIZER_NORMALIZER_H

#include <string>
#include <vector>

namespace nnsc::tokenizer {

class Normalizer {
public:
  /// Prepends `prefix` to every non-empty segment (the `Prepend` normalizer).
  void addPrepend(std::string prefix);
  /// Replaces every occurrence of the literal `pattern` (the `Replace` normalizer with a
  /// `String` pattern).
  void addReplace(std::string pattern, std::string content);

  bool empty() const { return steps.empty(); }
  /// Applies the steps in order.
  std::string normalize(std::string text) const;

private:
  struct Step {
    bool prepend;
    std::string pattern;
    std::string content;
  };
  std::vector<Step> steps;
};

/// Replaces every occurrence of `pattern` in `text` (which must be non-empty) by `content`.
std::string replaceAll(const std::string &text, const std::string &pattern,
                       const std::string &content);

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_NORMALIZER_H

//===- SplitPattern.h - The pre-tokenization regexes of known models -*- C++ -*-===//
//
// `tokenizers` splits text with Oniguruma regexes. Rather than embed a regex engine we
// recognize the few patterns real models use and match them with hand-written code that has
// the same leftmost-first, backtracking semantics (as llama.cpp does for its fast paths). Any
// other pattern is rejected when the tokenizer is loaded.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_SPLITPATTERN_H
#define NNSC_RUNTIME_TOKENIZER_SPLITPATTERN_H

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace nnsc::tokenizer {

enum class SplitPattern {
  /// GPT-2 (`ByteLevel` with `use_regex`), also SmolLM2 and StarCoder after digit splitting:
  /// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  GPT2,
  /// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  ///          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  /// Qwen2: the Llama 3 pattern with single digits (\p{N} instead of \p{N}{1,3}).
  Qwen2,
};

/// The pattern a `tokenizer.json` regex string spells, if it is one we implement.
std::optional<SplitPattern> recognizeSplitPattern(std::string_view regex);

/// The regex text of `pattern` (for messages and tests).
std::string_view splitPatternRegex(SplitPattern pattern);

/// All non-overlapping matches of `pattern` in `text`, left to right, as byte ranges
/// [begin, end), exactly as Oniguruma's find-iterator reports them.
std::vector<std::pair<size_t, size_t>> findSplitMatches(SplitPattern pattern,
                                                        std::string_view text);

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_SPLITPATTERN_H

//===- PreTokenizer.h - Splitting text into words before BPE ----*- C++ -*-===//
//
// A sequence of `tokenizers` pre-tokenizer steps applied to the pieces of one segment (the
// text between two added tokens). Each step transforms every current piece, in order, with
// the same semantics as the Rust implementation.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_PRETOKENIZER_H
#define NNSC_RUNTIME_TOKENIZER_PRETOKENIZER_H

#include "nnsc/Runtime/Tokenizer/SplitPattern.h"

#include <string>
#include <vector>

namespace nnsc::tokenizer {

/// A word on its way to the model. `atStart` says that the piece begins at offset 0 of the
/// input, which Metaspace's "first" prepend scheme looks at.
struct Piece {
  std::string text;
  bool atStart;
};

/// When Metaspace prepends its replacement character.
enum class PrependScheme { Always, First, Never };

class PreTokenizer {
public:
  /// `Split` with an `Isolated` behavior: matches and the gaps between them become pieces.
  void addSplit(SplitPattern pattern);
  /// `Digits`: numbers become their own pieces, one per digit if `individual`.
  void addDigits(bool individual);
  /// `ByteLevel`: optional prefix space, optional GPT-2 regex split, then every byte mapped to
  /// its printable character.
  void addByteLevel(bool addPrefixSpace, bool useRegex);
  /// `Metaspace`: spaces become `replacement`, which is prepended per `scheme`, and pieces are
  /// split before each replacement character if `split`.
  void addMetaspace(std::string replacement, PrependScheme scheme, bool split);

  /// Runs every step over `pieces`.
  void run(std::vector<Piece> &pieces) const;

private:
  enum class Kind { Split, Digits, ByteLevel, Metaspace };
  struct Step {
    Kind kind;
    SplitPattern pattern = SplitPattern::GPT2;
    bool flag = false;     // Digits: individual. ByteLevel: add prefix space. Metaspace: split.
    bool useRegex = false; // ByteLevel only.
    std::string replacement;
    PrependScheme scheme = PrependScheme::Always;
  };
  std::vector<Step> steps;
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_PRETOKENIZER_H

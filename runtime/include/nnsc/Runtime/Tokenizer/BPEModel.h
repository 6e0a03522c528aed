//===- BPEModel.h - Byte-pair encoding of one pre-tokenized word -*- C++ -*-===//
//
// The BPE model of `tokenizers`: a word starts as one symbol per character (or per byte
// token `<0xXX>` with byte fallback, or the unknown token), then the lowest-ranked adjacent
// pair is merged, leftmost first on ties, until no pair has a merge.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_TOKENIZER_BPEMODEL_H
#define NNSC_RUNTIME_TOKENIZER_BPEMODEL_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nnsc::tokenizer {

class BPEModel {
public:
  struct Options {
    /// Characters missing from the vocabulary become their `<0xXX>` byte tokens.
    bool byteFallback = false;
    /// Token for characters that are neither in the vocabulary nor byte-fallback encodable.
    /// Without one such characters are dropped, as in `tokenizers`.
    std::optional<int32_t> unknownId;
    /// Consecutive unknown characters become a single unknown token.
    bool fuseUnknown = false;
    /// A word that is itself in the vocabulary is emitted as is (Llama 3).
    bool ignoreMerges = false;
  };

  /// A merge given by token ids: `left` followed by `right` becomes `merged`.
  struct MergeIds {
    int32_t left;
    int32_t right;
    int32_t merged;
  };

  /// Builds the model from `vocab` (token text -> id) and `merges` in rank order. Fails with a
  /// message if a merge names a token (or a concatenation) missing from the vocabulary, or if
  /// two tokens share an id.
  static std::unique_ptr<BPEModel>
  create(const std::vector<std::pair<std::string, int32_t>> &vocab,
         const std::vector<std::pair<std::string, std::string>> &merges, Options options,
         std::string &error);
  /// Same with merges already resolved to ids (a loader that derived them from the
  /// vocabulary); fails if a merge uses an id no token has.
  static std::unique_ptr<BPEModel>
  createWithMergeIds(const std::vector<std::pair<std::string, int32_t>> &vocab,
                     const std::vector<MergeIds> &merges, Options options, std::string &error);

  /// Appends the ids of `word`.
  void tokenize(std::string_view word, std::vector<int32_t> &out) const;

  std::optional<int32_t> tokenToId(std::string_view token) const;
  /// Null if no token has this id.
  const std::string *idToToken(int32_t id) const;
  /// One past the largest id.
  size_t size() const { return static_cast<size_t>(maxId) + 1; }

private:
  BPEModel() = default;
  /// The model with `vocab` and `options` and no merges yet.
  static std::unique_ptr<BPEModel>
  createWithoutMerges(const std::vector<std::pair<std::string, int32_t>> &vocab, Options options,
                      std::string &error);
  void addMerge(uint32_t rank, int32_t left, int32_t right, int32_t merged);

  struct Merge {
    uint32_t rank;
    int32_t newId;
  };
  static uint64_t pairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const Merge *findMerge(int32_t left, int32_t right) const;
  /// The initial symbols of `word`, before any merge.
  std::vector<int32_t> initialSymbols(std::string_view word) const;

  Options options;
  std::unordered_map<std::string, int32_t> ids;
  /// By id. A map, not a table: ids may have gaps, as in `tokenizers` (a table sized by the
  /// largest id let a file with one id of 277440761 allocate 8.9 GB).
  std::unordered_map<int32_t, std::string> tokens;
  int32_t maxId = -1;
  std::unordered_map<uint64_t, Merge> merges;
  /// Ids of `<0x00>`..`<0xFF>`, -1 where the vocabulary lacks one.
  int32_t byteIds[256];
};

} // namespace nnsc::tokenizer

#endif // NNSC_RUNTIME_TOKENIZER_BPEMODEL_H

//===- Tokenizer.cpp - Hugging Face compatible BPE tokenizer --------------===//

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <algorithm>

namespace nnsc::tokenizer {

Tokenizer::Tokenizer(TokenizerParts parts) : parts(std::move(parts)) {}

void Tokenizer::encodeSegment(std::string_view text, bool atStart,
                              std::vector<int32_t> &out) const {
  std::string normalized = parts.normalizer.normalize(std::string(text));
  // Tokens marked `normalized` are only visible after normalization.
  std::vector<Segment> segments;
  if (parts.addedVocabulary.hasNormalized())
    segments = parts.addedVocabulary.split(normalized, /*matchNormalized=*/true);
  else
    segments.push_back({normalized, -1, 0});
  for (const Segment &segment : segments) {
    if (segment.id >= 0) {
      out.push_back(segment.id);
      continue;
    }
    std::vector<Piece> pieces{{std::string(segment.text), atStart && segment.offset == 0}};
    parts.preTokenizer.run(pieces);
    for (const Piece &piece : pieces)
      parts.model->tokenize(piece.text, out);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecial) const {
  std::vector<int32_t> ids;
  if (addSpecial)
    ids = parts.prefixIds;
  for (const Segment &segment : parts.addedVocabulary.split(text, /*matchNormalized=*/false)) {
    if (segment.id >= 0)
      ids.push_back(segment.id);
    else
      encodeSegment(segment.text, segment.offset == 0, ids);
  }
  if (addSpecial)
    ids.insert(ids.end(), parts.suffixIds.begin(), parts.suffixIds.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecial) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken *added = parts.addedVocabulary.findById(id)) {
      if (!(skipSpecial && added->special))
        tokens.push_back(added->content);
      continue;
    }
    if (const std::string *token = parts.model->idToToken(id))
      tokens.push_back(*token);
  }
  return parts.decoder.decode(std::move(tokens));
}

std::optional<std::string> Tokenizer::idToToken(int32_t id) const {
  if (const AddedToken *added = parts.addedVocabulary.findById(id))
    return added->content;
  if (const std::string *token = parts.model->idToToken(id))
    return *token;
  return std::nullopt;
}

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  if (const AddedToken *added = parts.addedVocabulary.findByContent(token))
    return added->id;
  return parts.model->tokenToId(token);
}

bool Tokenizer::isSpecial(int32_t id) const {
  const AddedToken *added = parts.addedVocabulary.findById(id);
  return added && added->special;
}

size_t Tokenizer::vocabSize() const {
  return std::max(parts.model->size(),
                  static_cast<size_t>(int64_t{parts.addedVocabulary.maxId()} + 1));
}

} // namespace nnsc::tokenizer

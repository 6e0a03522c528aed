//===- PreTokenizer.cpp - Splitting text into words before BPE ------------===//

#include "nnsc/Runtime/Tokenizer/PreTokenizer.h"

#include "nnsc/Runtime/Tokenizer/ByteLevel.h"
#include "nnsc/Runtime/Tokenizer/Normalizer.h"
#include "nnsc/Runtime/Tokenizer/Unicode.h"

namespace nnsc::tokenizer {

namespace {
/// Appends the pieces of `piece` cut at `ranges` (sorted, disjoint): each range and each gap
/// between ranges becomes a piece, as `SplitDelimiterBehavior::Isolated` does.
void splitIsolated(const Piece &piece, const std::vector<std::pair<size_t, size_t>> &ranges,
                   std::vector<Piece> &out) {
  size_t pos = 0;
  auto emit = [&](size_t begin, size_t end) {
    if (end > begin)
      out.push_back({piece.text.substr(begin, end - begin), piece.atStart && begin == 0});
  };
  for (auto [begin, end] : ranges) {
    emit(pos, begin);
    emit(begin, end);
    pos = end;
  }
  emit(pos, piece.text.size());
}

std::vector<std::pair<size_t, size_t>> digitRanges(const std::string &text, bool individual) {
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t pos = 0; pos < text.size();) {
    DecodedChar c = decodeUtf8(text, pos);
    if (isNumber(c.cp)) {
      if (!individual && !ranges.empty() && ranges.back().second == pos)
        ranges.back().second = pos + c.length;
      else
        ranges.emplace_back(pos, pos + c.length);
    }
    pos += c.length;
  }
  return ranges;
}

/// Cut points before every occurrence of `delimiter` except at 0
/// (`SplitDelimiterBehavior::MergedWithNext`).
std::vector<std::pair<size_t, size_t>> mergedWithNextRanges(const std::string &text,
                                                            const std::string &delimiter) {
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t begin = 0;
  for (size_t hit = text.find(delimiter, 1); hit != std::string::npos;
       hit = text.find(delimiter, hit + delimiter.size())) {
    ranges.emplace_back(begin, hit);
    begin = hit;
  }
  ranges.emplace_back(begin, text.size());
  return ranges;
}
} // namespace

void PreTokenizer::addSplit(SplitPattern pattern) {
  Step step{Kind::Split};
  step.pattern = pattern;
  steps.push_back(step);
}

void PreTokenizer::addDigits(bool individual) {
  Step step{Kind::Digits};
  step.flag = individual;
  steps.push_back(step);
}

void PreTokenizer::addByteLevel(bool addPrefixSpace, bool useRegex) {
  Step step{Kind::ByteLevel};
  step.flag = addPrefixSpace;
  step.useRegex = useRegex;
  steps.push_back(step);
}

void PreTokenizer::addMetaspace(std::string replacement, PrependScheme scheme, bool split) {
  Step step{Kind::Metaspace};
  step.replacement = std::move(replacement);
  step.scheme = scheme;
  step.flag = split;
  steps.push_back(step);
}

void PreTokenizer::run(std::vector<Piece> &pieces) const {
  for (const Step &step : steps) {
    std::vector<Piece> next;
    next.reserve(pieces.size());
    for (Piece &piece : pieces) {
      switch (step.kind) {
      case Kind::Split:
        splitIsolated(piece, findSplitMatches(step.pattern, piece.text), next);
        break;
      case Kind::Digits:
        splitIsolated(piece, digitRanges(piece.text, step.flag), next);
        break;
      case Kind::ByteLevel: {
        if (step.flag && piece.text.rfind(' ', 0) != 0)
          piece.text.insert(0, " ");
        size_t first = next.size();
        if (step.useRegex)
          splitIsolated(piece, findSplitMatches(SplitPattern::GPT2, piece.text), next);
        else
          next.push_back(piece);
        for (size_t i = first; i < next.size(); ++i)
          next[i].text = byteLevelEncode(next[i].text);
        break;
      }
      case Kind::Metaspace: {
        piece.text = replaceAll(piece.text, " ", step.replacement);
        bool prepend = step.scheme == PrependScheme::Always ||
                       (step.scheme == PrependScheme::First && piece.atStart);
        if (prepend && piece.text.rfind(step.replacement, 0) != 0)
          piece.text.insert(0, step.replacement);
        if (step.flag)
          splitIsolated(piece, mergedWithNextRanges(piece.text, step.replacement), next);
        else
          next.push_back(piece);
        break;
      }
      }
    }
    pieces = std::move(next);
  }
}

} // namespace nnsc::tokenizer

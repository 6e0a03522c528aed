//===- AddedVocabulary.cpp - Tokens matched before pre-tokenization -------===//

#include "nnsc/Runtime/Tokenizer/AddedVocabulary.h"

#include "nnsc/Runtime/Tokenizer/Unicode.h"

#include <algorithm>

namespace nnsc::tokenizer {

/// A byte trie over token contents; `token` indexes `tokens` where a content ends.
struct AddedVocabulary::TrieNode {
  std::map<unsigned char, std::unique_ptr<TrieNode>> children;
  int64_t token = -1;
};

AddedVocabulary::AddedVocabulary()
    : rawTrie(std::make_unique<TrieNode>()), normalizedTrie(std::make_unique<TrieNode>()) {}
AddedVocabulary::~AddedVocabulary() = default;
AddedVocabulary::AddedVocabulary(AddedVocabulary &&) noexcept = default;
AddedVocabulary &AddedVocabulary::operator=(AddedVocabulary &&) noexcept = default;

bool AddedVocabulary::add(const AddedToken &token) {
  if (token.content.empty())
    return false;
  if (const AddedToken *existing = findByContent(token.content))
    return existing->id == token.id;
  size_t index = tokens.size();
  tokens.push_back(token);
  byId.emplace(token.id, index);
  byContent.emplace(token.content, index);
  TrieNode *node = token.normalized ? normalizedTrie.get() : rawTrie.get();
  for (unsigned char c : token.content) {
    auto &child = node->children[c];
    if (!child)
      child = std::make_unique<TrieNode>();
    node = child.get();
  }
  node->token = static_cast<int64_t>(index);
  numNormalized += token.normalized;
  largestId = std::max(largestId, token.id);
  return true;
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, bool matchNormalized) const {
  return splitWith(matchNormalized ? *normalizedTrie : *rawTrie, text);
}

std::vector<Segment> AddedVocabulary::splitWith(const TrieNode &root, std::string_view text) const {
  std::vector<Segment> segments;
  size_t textStart = 0;
  auto isSpaceAt = [&](size_t pos) { return isWhitespace(decodeUtf8(text, pos).cp); };
  for (size_t start = 0; start < text.size();) {
    // Longest token starting at `start`.
    const TrieNode *node = &root;
    int64_t best = -1;
    size_t bestEnd = 0;
    for (size_t i = start; i < text.size(); ++i) {
      auto it = node->children.find(static_cast<unsigned char>(text[i]));
      if (it == node->children.end())
        break;
      node = it->second.get();
      if (node->token >= 0) {
        best = node->token;
        bestEnd = i + 1;
      }
    }
    if (best < 0) {
      ++start;
      continue;
    }
    const AddedToken &token = tokens[best];
    size_t matchStart = start;
    size_t matchEnd = bestEnd;
    if (token.lstrip) {
      // Walk back over whole whitespace characters inside the pending text.
      while (matchStart > textStart) {
        size_t p = matchStart - 1;
        while (p > textStart && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80)
          --p;
        if (!isSpaceAt(p))
          break;
        matchStart = p;
      }
    }
    if (token.rstrip) {
      while (matchEnd < text.size() && isSpaceAt(matchEnd))
        matchEnd += decodeUtf8(text, matchEnd).length;
    }
    if (matchStart > textStart)
      segments.push_back({text.substr(textStart, matchStart - textStart), -1, textStart});
    segments.push_back({text.substr(matchStart, matchEnd - matchStart), token.id, matchStart});
    textStart = start = matchEnd;
  }
  if (textStart < text.size())
    segments.push_back({text.substr(textStart), -1, textStart});
  return segments;
}

const AddedToken *AddedVocabulary::findById(int32_t id) const {
  auto it = byId.find(id);
  return it == byId.end() ? nullptr : &tokens[it->second];
}

const AddedToken *AddedVocabulary::findByContent(std::string_view content) const {
  auto it = byContent.find(content);
  return it == byContent.end() ? nullptr : &tokens[it->second];
}

} // namespace nnsc::tokenizer

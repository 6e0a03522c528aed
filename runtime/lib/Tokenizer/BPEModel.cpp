//===- BPEModel.cpp - Byte-pair encoding of one pre-tokenized word --------===//

#include "nnsc/Runtime/Tokenizer/BPEModel.h"

#include "nnsc/Runtime/Tokenizer/Unicode.h"

#include <cstdio>
#include <queue>

namespace nnsc::tokenizer {

std::unique_ptr<BPEModel>
BPEModel::createWithoutMerges(const std::vector<std::pair<std::string, int32_t>> &vocab,
                              Options options, std::string &error) {
  std::unique_ptr<BPEModel> model(new BPEModel());
  model->options = options;
  model->tokens.reserve(vocab.size());
  model->ids.reserve(vocab.size());
  for (const auto &[token, id] : vocab) {
    if (id < 0) {
      error = "token '" + token + "' has negative id " + std::to_string(id);
      return nullptr;
    }
    if (auto [it, added] = model->tokens.emplace(id, token); !added) {
      error = "tokens '" + it->second + "' and '" + token + "' share id " + std::to_string(id);
      return nullptr;
    }
    if (!model->ids.emplace(token, id).second) {
      error = "token '" + token + "' appears twice in the vocabulary";
      return nullptr;
    }
    model->maxId = std::max(model->maxId, id);
  }
  if (options.unknownId && !model->tokens.count(*options.unknownId)) {
    error = "unknown-token id " + std::to_string(*options.unknownId) + " is not in the vocabulary";
    return nullptr;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = model->ids.find(name);
    model->byteIds[b] = it == model->ids.end() ? -1 : it->second;
  }
  return model;
}

void BPEModel::addMerge(uint32_t rank, int32_t left, int32_t right, int32_t merged) {
  // A repeated pair takes its last rank: `tokenizers` collects the list into a hash map.
  merges.insert_or_assign(pairKey(left, right), Merge{rank, merged});
}

std::unique_ptr<BPEModel>
BPEModel::create(const std::vector<std::pair<std::string, int32_t>> &vocab,
                 const std::vector<std::pair<std::string, std::string>> &mergeList, Options options,
                 std::string &error) {
  std::unique_ptr<BPEModel> model = createWithoutMerges(vocab, options, error);
  if (!model)
    return nullptr;
  model->merges.reserve(mergeList.size());
  for (size_t rank = 0; rank < mergeList.size(); ++rank) {
    const auto &[left, right] = mergeList[rank];
    auto l = model->ids.find(left);
    auto r = model->ids.find(right);
    auto m = model->ids.find(left + right);
    if (l == model->ids.end() || r == model->ids.end() || m == model->ids.end()) {
      const std::string &missing = l == model->ids.end()   ? left
                                   : r == model->ids.end() ? right
                                                           : left + right;
      error = "merge " + std::to_string(rank) + " ('" + left + "' '" + right + "') uses '" +
              missing + "', which is not in the vocabulary";
      return nullptr;
    }
    model->addMerge(static_cast<uint32_t>(rank), l->second, r->second, m->second);
  }
  return model;
}

std::unique_ptr<BPEModel>
BPEModel::createWithMergeIds(const std::vector<std::pair<std::string, int32_t>> &vocab,
                             const std::vector<MergeIds> &mergeList, Options options,
                             std::string &error) {
  std::unique_ptr<BPEModel> model = createWithoutMerges(vocab, options, error);
  if (!model)
    return nullptr;
  model->merges.reserve(mergeList.size());
  for (size_t rank = 0; rank < mergeList.size(); ++rank) {
    const MergeIds &merge = mergeList[rank];
    for (int32_t id : {merge.left, merge.right, merge.merged}) {
      if (!model->tokens.count(id)) {
        error = "merge " + std::to_string(rank) + " uses id " + std::to_string(id) +
                ", which no token has";
        return nullptr;
      }
    }
    model->addMerge(static_cast<uint32_t>(rank), merge.left, merge.right, merge.merged);
  }
  return model;
}

const BPEModel::Merge *BPEModel::findMerge(int32_t left, int32_t right) const {
  auto it = merges.find(pairKey(left, right));
  return it == merges.end() ? nullptr : &it->second;
}

std::vector<int32_t> BPEModel::initialSymbols(std::string_view word) const {
  std::vector<int32_t> symbols;
  // A pending run of unknown characters, flushed before the next known one (fuse_unk).
  bool pendingUnknown = false;
  auto flushUnknown = [&] {
    if (pendingUnknown)
      symbols.push_back(*options.unknownId);
    pendingUnknown = false;
  };
  for (size_t pos = 0; pos < word.size();) {
    DecodedChar c = decodeUtf8(word, pos);
    std::string_view ch = word.substr(pos, c.length);
    pos += c.length;
    auto it = ids.find(std::string(ch));
    if (it != ids.end()) {
      flushUnknown();
      symbols.push_back(it->second);
      continue;
    }
    if (options.byteFallback) {
      bool all = true;
      for (char b : ch)
        all = all && byteIds[static_cast<uint8_t>(b)] >= 0;
      if (all) {
        // Like `tokenizers`, byte tokens do not flush a pending unknown token first.
        for (char b : ch)
          symbols.push_back(byteIds[static_cast<uint8_t>(b)]);
        continue;
      }
    }
    if (!options.unknownId)
      continue;
    if (pendingUnknown && !options.fuseUnknown)
      flushUnknown();
    pendingUnknown = true;
  }
  flushUnknown();
  return symbols;
}

void BPEModel::tokenize(std::string_view word, std::vector<int32_t> &out) const {
  if (word.empty())
    return;
  if (options.ignoreMerges) {
    if (auto id = tokenToId(word)) {
      out.push_back(*id);
      return;
    }
  }
  std::vector<int32_t> symbol = initialSymbols(word);
  size_t n = symbol.size();
  // A doubly linked list over the symbols; merged-away symbols are marked dead.
  std::vector<int64_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int64_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
  }
  struct Candidate {
    uint32_t rank;
    size_t pos;
    int32_t newId;
    bool operator<(const Candidate &o) const {
      // std::priority_queue pops the largest: make that the lowest rank, then leftmost.
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate> queue;
  for (size_t i = 0; i + 1 < n; ++i)
    if (const Merge *m = findMerge(symbol[i], symbol[i + 1]))
      queue.push({m->rank, i, m->newId});
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    if (!alive[top.pos] || next[top.pos] < 0)
      continue;
    size_t right = static_cast<size_t>(next[top.pos]);
    // Skip entries made stale by an earlier merge at this position.
    const Merge *m = findMerge(symbol[top.pos], symbol[right]);
    if (!m || m->newId != top.newId)
      continue;
    symbol[top.pos] = top.newId;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0)
      prev[next[right]] = static_cast<int64_t>(top.pos);
    if (prev[top.pos] >= 0) {
      size_t p = static_cast<size_t>(prev[top.pos]);
      if (const Merge *pm = findMerge(symbol[p], symbol[top.pos]))
        queue.push({pm->rank, p, pm->newId});
    }
    if (next[top.pos] >= 0) {
      if (const Merge *nm = findMerge(symbol[top.pos], symbol[next[top.pos]]))
        queue.push({nm->rank, top.pos, nm->newId});
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (alive[i])
      out.push_back(symbol[i]);
}

std::optional<int32_t> BPEModel::tokenToId(std::string_view token) const {
  auto it = ids.find(std::string(token));
  if (it == ids.end())
    return std::nullopt;
  return it->second;
}

const std::string *BPEModel::idToToken(int32_t id) const {
  auto it = tokens.find(id);
  return it == tokens.end() ? nullptr : &it->second;
}

} // namespace nnsc::tokenizer

//===- BlockManager.cpp - Paged KV blocks with prefix caching ---*- C++ -*-===//

#include "nnsc/Runtime/Engine/BlockManager.h"

#include "nnsc/Runtime/Support/Error.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nnsc {

namespace {

/// The 64-bit finalizer of MurmurHash3: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

} // namespace

uint64_t hashBlock(uint64_t parentHash, std::span<const int32_t> tokens, uint64_t salt) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  uint64_t h = mix(parentHash + kGolden);
  h = mix(h ^ (salt + kGolden));
  h = mix(h ^ tokens.size());
  for (int32_t token : tokens)
    h = mix(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + kGolden));
  return h;
}

BlockManager::BlockManager(int64_t numBlocks, int64_t blockSize, bool enablePrefixCaching,
                           BlockHashFn hash)
    : size(blockSize), prefixCaching(enablePrefixCaching), hashFn(hash) {
  if (numBlocks <= 0)
    throw InvalidInput("block manager: the number of KV blocks must be positive, got " +
                       std::to_string(numBlocks));
  if (blockSize <= 0)
    throw InvalidInput("block manager: the block size must be positive, got " +
                       std::to_string(blockSize));
  blocks.resize(numBlocks);
  freePos.resize(numBlocks);
  for (int32_t id = 0; id < numBlocks; ++id)
    freePos[id] = freeList.insert(freeList.end(), id);
}

void BlockManager::computeBlockHashes(Sequence &seq, int64_t count) const {
  for (auto i = static_cast<int64_t>(seq.blockHashes.size()); i < count; ++i) {
    uint64_t parent = i == 0 ? 0 : seq.blockHashes[i - 1];
    seq.blockHashes.push_back(hashFn(parent, seq.blockTokens(i, size), seq.cacheSalt()));
  }
}

std::vector<int32_t> BlockManager::findCachedPrefix(Sequence &seq) const {
  std::vector<int32_t> hits;
  if (!prefixCaching || !seq.allowPrefixHits)
    return hits;
  // Only blocks that end before the last token: the last token is always computed.
  int64_t candidates = (seq.numTokens() - 1) / size;
  computeBlockHashes(seq, candidates);
  for (int64_t i = 0; i < candidates; ++i) {
    auto it = hashToBlock.find(seq.blockHashes[i]);
    if (it == hashToBlock.end())
      break;
    const Block &block = blocks[it->second];
    std::span<const int32_t> tokens = seq.blockTokens(i, size);
    int32_t parent = hits.empty() ? -1 : hits.back();
    bool sameParent = block.parentId == parent &&
                      (parent < 0 || block.parentGeneration == blocks[parent].generation);
    if (!sameParent || block.salt != seq.cacheSalt() ||
        !std::equal(block.tokenIds.begin(), block.tokenIds.end(), tokens.begin(), tokens.end()))
      break;
    hits.push_back(it->second);
  }
  return hits;
}

void BlockManager::takeFree(int32_t blockId) {
  freeList.erase(freePos[blockId]);
  blocks[blockId].refCount = 1;
}

int32_t BlockManager::takeFresh() {
  if (freeList.empty())
    throw std::logic_error("block manager: no free KV block (check canAllocate/canAppend first)");
  int32_t id = freeList.front();
  takeFree(id);
  Block &block = blocks[id];
  if (block.hash) {
    auto it = hashToBlock.find(*block.hash);
    if (it != hashToBlock.end() && it->second == id)
      hashToBlock.erase(it);
    block.hash.reset();
  }
  block.tokenIds.clear();
  ++block.generation;
  return id;
}

void BlockManager::release(int32_t blockId) {
  Block &block = blocks[blockId];
  if (--block.refCount > 0)
    return;
  // Blocks without cached contents are worth nothing: reuse them before evicting any cache.
  freePos[blockId] = block.hash ? freeList.insert(freeList.end(), blockId)
                                : freeList.insert(freeList.begin(), blockId);
}

bool BlockManager::canAllocate(Sequence &seq) {
  std::vector<int32_t> hits = findCachedPrefix(seq);
  auto shared =
      std::count_if(hits.begin(), hits.end(), [&](int32_t id) { return blocks[id].refCount > 0; });
  return seq.numBlocks(size) - shared <= numFreeBlocks();
}

void BlockManager::allocate(Sequence &seq) {
  if (!seq.blockTable.empty())
    throw std::logic_error("block manager: sequence " + std::to_string(seq.id()) +
                           " already has blocks");
  std::vector<int32_t> hits = findCachedPrefix(seq);
  for (int32_t id : hits) {
    if (blocks[id].refCount == 0)
      takeFree(id);
    else
      ++blocks[id].refCount;
    seq.blockTable.push_back(id);
  }
  while (static_cast<int64_t>(seq.blockTable.size()) < seq.numBlocks(size))
    seq.blockTable.push_back(takeFresh());
  seq.numCachedTokens = static_cast<int64_t>(hits.size()) * size;
  hitTokens += seq.numCachedTokens;
}

void BlockManager::deallocate(Sequence &seq) {
  // Tail first, so a sequence's later blocks are evicted before its (more shareable) prefix.
  for (auto it = seq.blockTable.rbegin(); it != seq.blockTable.rend(); ++it)
    release(*it);
  seq.blockTable.clear();
  seq.numCachedTokens = 0;
}

bool BlockManager::canAppend(const Sequence &seq) const {
  int64_t missing = seq.numBlocks(size) - static_cast<int64_t>(seq.blockTable.size());
  return missing <= numFreeBlocks();
}

void BlockManager::mayAppend(Sequence &seq) {
  while (static_cast<int64_t>(seq.blockTable.size()) < seq.numBlocks(size))
    seq.blockTable.push_back(takeFresh());
}

void BlockManager::cacheComputedBlocks(Sequence &seq) {
  if (!prefixCaching)
    return;
  int64_t full =
      std::min<int64_t>(seq.numCachedTokens / size, static_cast<int64_t>(seq.blockTable.size()));
  if (!seq.cacheCompletion)
    full = std::min(full, seq.numPromptTokens() / size);
  computeBlockHashes(seq, full);
  // Blocks are registered in order, so everything before the last registered one is too.
  int64_t first = full;
  while (first > 0 && !blocks[seq.blockTable[first - 1]].hash)
    --first;
  for (int64_t i = first; i < full; ++i) {
    int32_t id = seq.blockTable[i];
    Block &block = blocks[id];
    std::span<const int32_t> tokens = seq.blockTokens(i, size);
    block.hash = seq.blockHashes[i];
    block.tokenIds.assign(tokens.begin(), tokens.end());
    block.salt = seq.cacheSalt();
    block.parentId = i == 0 ? -1 : seq.blockTable[i - 1];
    block.parentGeneration = i == 0 ? 0 : blocks[block.parentId].generation;
    hashToBlock[*block.hash] = id;
  }
}

} // namespace nnsc

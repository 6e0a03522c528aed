//===- BlockManager.h - Paged KV blocks with prefix caching -----*- C++ -*-===//
//
// Hands out fixed-size KV-cache blocks to sequences and shares full blocks between sequences
// with the same prefix (nano-vllm's design). A full block is identified by a chained hash of
// (parent block hash, its token ids, the sequence's cache salt); a hit is accepted only after
// comparing the stored token ids, salt and exact parent block, so a hash collision can cost a
// miss but never a wrong reuse. Blocks are registered in the cache only once their K/V has
// been computed (cacheComputedBlocks), so a sequence never reads a block another sequence has
// not written yet. Freed blocks keep their contents and stay findable until reused (LRU).
// Works on block ids only; never touches tensors.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_BLOCKMANAGER_H
#define NNSC_RUNTIME_ENGINE_BLOCKMANAGER_H

#include "nnsc/Runtime/Engine/Sequence.h"

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace nnsc {

/// Hash of a full block given its parent's hash (0 for the first block), its tokens and the
/// sequence's cache salt.
using BlockHashFn = uint64_t (*)(uint64_t parentHash, std::span<const int32_t> tokens,
                                 uint64_t salt);

/// The default BlockHashFn: a 64-bit multiply-xorshift mix of every input.
uint64_t hashBlock(uint64_t parentHash, std::span<const int32_t> tokens, uint64_t salt);

/// Allocator of paged KV blocks with reference counts and prefix caching.
class BlockManager {
public:
  /// `hash` is replaceable so tests can force collisions. Throws InvalidInput for a
  /// non-positive block count or block size.
  BlockManager(int64_t numBlocks, int64_t blockSize, bool enablePrefixCaching = true,
               BlockHashFn hash = hashBlock);

  int64_t numBlocks() const { return static_cast<int64_t>(blocks.size()); }
  int64_t blockSize() const { return size; }
  int64_t numFreeBlocks() const { return static_cast<int64_t>(freeList.size()); }
  /// Number of sequences whose block table holds `blockId`.
  int32_t refCount(int32_t blockId) const { return blocks.at(blockId).refCount; }
  /// Prompt tokens served from the prefix cache so far (for statistics).
  int64_t numHitTokens() const { return hitTokens; }

  /// Whether allocate(seq) would succeed now, counting the blocks a prefix hit shares.
  bool canAllocate(Sequence &seq);
  /// Gives `seq` (with an empty block table) blocks for all its tokens: shared cached blocks
  /// for its longest verified cached prefix, fresh ones for the rest. Sets numCachedTokens to
  /// the cached prefix length, which is always at most numTokens - 1 so the last token is
  /// computed and yields logits. Precondition: canAllocate(seq).
  void allocate(Sequence &seq);
  /// Drops `seq`'s references, empties its block table and resets numCachedTokens.
  void deallocate(Sequence &seq);
  /// Whether a block is free for the token `seq` computes next, if it needs one.
  bool canAppend(const Sequence &seq) const;
  /// Grows `seq`'s block table to cover all its tokens. Precondition: canAppend(seq).
  void mayAppend(Sequence &seq);
  /// Registers the blocks of `seq` that are full and fully computed (per numCachedTokens) in
  /// the prefix cache. Call after every step that computed tokens for `seq`.
  void cacheComputedBlocks(Sequence &seq);

private:
  struct Block {
    int32_t refCount = 0;
    /// Set while the block is registered in the prefix cache.
    std::optional<uint64_t> hash;
    std::vector<int32_t> tokenIds;
    uint64_t salt = 0;
    /// The block holding the previous logical block when this one was cached (-1 for a
    /// sequence's first block), and that block's generation then.
    int32_t parentId = -1;
    uint64_t parentGeneration = 0;
    /// Bumped whenever the block is reused for other contents.
    uint64_t generation = 0;
  };

  /// Extends seq.blockHashes to cover its first `count` full blocks.
  void computeBlockHashes(Sequence &seq, int64_t count) const;
  /// Blocks holding the longest verified cached prefix of `seq` (full blocks only, leaving at
  /// least the last token uncached).
  std::vector<int32_t> findCachedPrefix(Sequence &seq) const;
  /// Takes `blockId` out of the free list (it may still hold cached contents).
  void takeFree(int32_t blockId);
  /// Takes the least recently freed block and clears its cached contents.
  int32_t takeFresh();
  void release(int32_t blockId);

  int64_t size;
  bool prefixCaching;
  BlockHashFn hashFn;
  std::vector<Block> blocks;
  /// Free blocks, reused from the front: blocks without cached contents first, then cached
  /// ones in the order they were freed.
  std::list<int32_t> freeList;
  /// Position of each free block in freeList.
  std::vector<std::list<int32_t>::iterator> freePos;
  std::unordered_map<uint64_t, int32_t> hashToBlock;
  int64_t hitTokens = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_BLOCKMANAGER_H

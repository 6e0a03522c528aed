//===- BlockManagerTest.cpp - Paged KV blocks and prefix caching -*- C++ -*-===//

#include "nnsc/Runtime/Engine/BlockManager.h"

#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

#include <numeric>

namespace {

using nnsc::BlockManager;
using nnsc::Sequence;

constexpr int64_t kBlockSize = 16;

std::vector<int32_t> iota(int32_t n, int32_t start) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// What a step does to the block manager once the model computed all of `seq`'s tokens.
void markComputed(BlockManager &bm, Sequence &seq) {
  seq.numCachedTokens = seq.numTokens();
  bm.cacheComputedBlocks(seq);
}

/// A hash that ignores the tokens: every sequence's block i collides with every other's.
uint64_t positionOnlyHash(uint64_t parent, std::span<const int32_t>, uint64_t) {
  return parent + 1;
}

TEST(BlockManager, AllocateAndFree) {
  BlockManager bm(10, kBlockSize);
  Sequence seq(0, iota(40, 0));
  ASSERT_TRUE(bm.canAllocate(seq));
  bm.allocate(seq);
  ASSERT_EQ(seq.blockTable.size(), 3u);
  EXPECT_EQ(bm.numFreeBlocks(), 7);
  EXPECT_EQ(seq.numCachedTokens, 0);
  for (int32_t id : seq.blockTable)
    EXPECT_EQ(bm.refCount(id), 1);
  bm.deallocate(seq);
  EXPECT_TRUE(seq.blockTable.empty());
  EXPECT_EQ(bm.numFreeBlocks(), 10);
}

TEST(BlockManager, CannotAllocateMoreThanFree) {
  BlockManager bm(2, kBlockSize);
  Sequence seq(0, iota(33, 0));
  EXPECT_FALSE(bm.canAllocate(seq));
  Sequence small(1, iota(32, 0));
  EXPECT_TRUE(bm.canAllocate(small));
}

TEST(BlockManager, PrefixHitSharesComputedBlocks) {
  BlockManager bm(10, kBlockSize);
  Sequence a(0, iota(40, 0));
  bm.allocate(a);
  markComputed(bm, a);

  Sequence b(1, concat(iota(32, 0), iota(5, 1000)));
  ASSERT_TRUE(bm.canAllocate(b));
  bm.allocate(b);
  EXPECT_EQ(b.numCachedTokens, 32);
  ASSERT_EQ(b.blockTable.size(), 3u);
  EXPECT_EQ(b.blockTable[0], a.blockTable[0]);
  EXPECT_EQ(b.blockTable[1], a.blockTable[1]);
  EXPECT_NE(b.blockTable[2], a.blockTable[2]);
  EXPECT_EQ(bm.refCount(a.blockTable[0]), 2);
  EXPECT_EQ(bm.refCount(a.blockTable[2]), 1);
  EXPECT_EQ(bm.numHitTokens(), 32);

  // Dropping one owner keeps the shared blocks for the other.
  bm.deallocate(a);
  EXPECT_EQ(bm.refCount(b.blockTable[0]), 1);
  EXPECT_EQ(bm.numFreeBlocks(), 10 - 3);
  bm.deallocate(b);
  EXPECT_EQ(bm.numFreeBlocks(), 10);
}

TEST(BlockManager, MissAfterFirstDifferentBlock) {
  BlockManager bm(10, kBlockSize);
  Sequence a(0, iota(48, 0));
  bm.allocate(a);
  markComputed(bm, a);
  std::vector<int32_t> tokens = iota(48, 0);
  tokens[20] = 999; // block 1 differs, so block 2 cannot be reused either
  Sequence b(1, tokens);
  bm.allocate(b);
  EXPECT_EQ(b.numCachedTokens, 16);
  EXPECT_EQ(b.blockTable[0], a.blockTable[0]);
  EXPECT_NE(b.blockTable[1], a.blockTable[1]);
  EXPECT_NE(b.blockTable[2], a.blockTable[2]);
}

TEST(BlockManager, UncomputedBlocksAreNotShared) {
  BlockManager bm(10, kBlockSize);
  Sequence a(0, iota(40, 0));
  bm.allocate(a); // K/V not written yet
  Sequence b(1, iota(40, 0));
  bm.allocate(b);
  EXPECT_EQ(b.numCachedTokens, 0);
  EXPECT_NE(b.blockTable[0], a.blockTable[0]);
}

TEST(BlockManager, LastTokenIsAlwaysComputed) {
  BlockManager bm(10, kBlockSize);
  Sequence a(0, iota(40, 0));
  bm.allocate(a);
  markComputed(bm, a);
  // A prompt made exactly of two cached blocks reuses only the first: the second holds the
  // last token, which must be computed to produce logits.
  Sequence b(1, iota(32, 0));
  bm.allocate(b);
  EXPECT_EQ(b.numCachedTokens, 16);
  EXPECT_NE(b.blockTable[1], a.blockTable[1]);
}

TEST(BlockManager, HashCollisionIsVerifiedByTokens) {
  BlockManager bm(10, kBlockSize, /*enablePrefixCaching=*/true, positionOnlyHash);
  Sequence a(0, iota(40, 0));
  bm.allocate(a);
  markComputed(bm, a);

  Sequence other(1, iota(40, 500)); // same hashes, different tokens
  bm.allocate(other);
  EXPECT_EQ(other.numCachedTokens, 0);
  EXPECT_NE(other.blockTable[0], a.blockTable[0]);

  Sequence same(2, iota(40, 0)); // the verified path still hits under the weak hash
  bm.allocate(same);
  EXPECT_EQ(same.numCachedTokens, 32);
  EXPECT_EQ(same.blockTable[1], a.blockTable[1]);
}

TEST(BlockManager, CollidingBlockWithDifferentParentIsRejected) {
  BlockManager bm(10, kBlockSize, /*enablePrefixCaching=*/true, positionOnlyHash);
  // a = [P, Q, r], c = [P2, Q, r]: c's second block hashes and compares equal to a's, but it
  // follows a different first block, so it must not be reused.
  Sequence a(0, concat(iota(32, 0), {7}));
  bm.allocate(a);
  markComputed(bm, a);
  bm.deallocate(a);
  Sequence p2(1, concat(iota(16, 100), {7}));
  bm.allocate(p2);
  markComputed(bm, p2); // now block hash 1 maps to [P2]
  Sequence c(2, concat(concat(iota(16, 100), iota(16, 16)), {7}));
  bm.allocate(c);
  EXPECT_EQ(c.numCachedTokens, 16);
  EXPECT_EQ(c.blockTable[0], p2.blockTable[0]);
}

TEST(BlockManager, SaltSeparatesCaches) {
  BlockManager bm(10, kBlockSize);
  Sequence a(0, iota(40, 0), {}, /*cacheSalt=*/1);
  bm.allocate(a);
  markComputed(bm, a);
  Sequence unsalted(1, iota(40, 0));
  bm.allocate(unsalted);
  EXPECT_EQ(unsalted.numCachedTokens, 0);
  Sequence otherSalt(2, iota(40, 0), {}, /*cacheSalt=*/2);
  bm.allocate(otherSalt);
  EXPECT_EQ(otherSalt.numCachedTokens, 0);
  Sequence sameSalt(3, iota(40, 0), {}, /*cacheSalt=*/1);
  bm.allocate(sameSalt);
  EXPECT_EQ(sameSalt.numCachedTokens, 32);
  EXPECT_EQ(sameSalt.blockTable[0], a.blockTable[0]);
}

TEST(BlockManager, OptOutAndDisabledCaching) {
  BlockManager bm(10, kBlockSize);
  Sequence a(0, iota(40, 0));
  bm.allocate(a);
  markComputed(bm, a);
  Sequence noHits(1, iota(40, 0));
  noHits.allowPrefixHits = false;
  bm.allocate(noHits);
  EXPECT_EQ(noHits.numCachedTokens, 0);

  BlockManager off(10, kBlockSize, /*enablePrefixCaching=*/false);
  Sequence c(2, iota(40, 0));
  off.allocate(c);
  markComputed(off, c);
  Sequence d(3, iota(40, 0));
  off.allocate(d);
  EXPECT_EQ(d.numCachedTokens, 0);
}

TEST(BlockManager, FreedBlocksStayCachedUntilReused) {
  BlockManager bm(4, kBlockSize);
  Sequence a(0, iota(40, 0));
  bm.allocate(a);
  markComputed(bm, a);
  std::vector<int32_t> aBlocks = a.blockTable;
  bm.deallocate(a);
  EXPECT_EQ(bm.numFreeBlocks(), 4);

  Sequence b(1, iota(40, 0));
  ASSERT_TRUE(bm.canAllocate(b));
  bm.allocate(b);
  EXPECT_EQ(b.numCachedTokens, 32);
  EXPECT_EQ(b.blockTable[0], aBlocks[0]);
  EXPECT_EQ(bm.numFreeBlocks(), 1);
  bm.deallocate(b);

  // A sequence needing every block evicts the cached ones.
  Sequence big(2, iota(64, 5000));
  bm.allocate(big);
  markComputed(bm, big);
  bm.deallocate(big);
  Sequence c(3, iota(40, 0));
  bm.allocate(c);
  EXPECT_EQ(c.numCachedTokens, 0);
}

TEST(BlockManager, CanAllocateCountsSharedBlocks) {
  BlockManager bm(4, kBlockSize);
  Sequence a(0, iota(40, 0));
  bm.allocate(a);
  markComputed(bm, a); // a holds 3 blocks, 1 free
  Sequence b(1, iota(40, 0));
  // b needs 3 blocks but shares 2 of a's, so the one free block is enough.
  EXPECT_TRUE(bm.canAllocate(b));
  bm.allocate(b);
  EXPECT_EQ(bm.numFreeBlocks(), 0);
  Sequence c(2, iota(17, 900));
  EXPECT_FALSE(bm.canAllocate(c));
}

TEST(BlockManager, AppendGrowsAtBlockBoundary) {
  BlockManager bm(3, kBlockSize);
  Sequence seq(0, iota(16, 0));
  bm.allocate(seq);
  markComputed(bm, seq);
  seq.appendToken(1); // position 16 starts a new block
  ASSERT_TRUE(bm.canAppend(seq));
  bm.mayAppend(seq);
  EXPECT_EQ(seq.blockTable.size(), 2u);
  EXPECT_EQ(bm.numFreeBlocks(), 1);
  seq.appendToken(2); // position 17 fits in the same block
  bm.mayAppend(seq);
  EXPECT_EQ(seq.blockTable.size(), 2u);

  Sequence other(1, iota(16, 100));
  bm.allocate(other);
  for (int i = 0; i < 15; ++i)
    seq.appendToken(3);
  EXPECT_FALSE(bm.canAppend(seq)); // needs a third block, none free
}

TEST(BlockManager, RejectsBadSizes) {
  EXPECT_THROW(BlockManager(0, 16), nnsc::InvalidInput);
  EXPECT_THROW(BlockManager(8, 0), nnsc::InvalidInput);
  try {
    BlockManager bm(8, -4);
    FAIL() << "expected an error for block size -4";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("block size must be positive, got -4"), std::string::npos)
        << e.what();
  }
}

TEST(Sequence, RejectsBadPrompts) {
  EXPECT_THROW(Sequence(0, {}), nnsc::InvalidInput);
  try {
    Sequence(3, {1, 2, -5});
    FAIL() << "expected an error for a negative token";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("negative token id -5 at position 2"), std::string::npos)
        << e.what();
  }
}

} // namespace

//===- TensorShardTest.cpp - what each tensor-parallel rank holds ---------===//

#include "nnsc/Runtime/Models/TensorShard.h"

#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

using namespace nnsc;

namespace {

/// SmolLM2-135M's dimensions: 9 heads, 3 KV heads, 1536 intermediate, 49152 vocabulary.
schema::ModelConfig smolLM2() {
  schema::ModelConfig c;
  c.hidden = 576;
  c.intermediate = 1536;
  c.heads = 9;
  c.kvHeads = 3;
  c.headDim = 64;
  c.vocab = 49152;
  c.layers = 30;
  return c;
}

std::string errorOf(const schema::ModelConfig &c, int size) {
  try {
    TensorShard::of(c, 0, size);
  } catch (const nnsc::InvalidInput &e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST(TensorShard, SplitsHeadsChannelsAndVocabulary) {
  for (int r = 0; r < 3; ++r) {
    TensorShard s = TensorShard::of(smolLM2(), r, 3);
    EXPECT_EQ(s.heads, 3);
    EXPECT_EQ(s.headBegin, 3 * r);
    EXPECT_EQ(s.kvHeads, 1);
    EXPECT_EQ(s.kvHeadBegin, r);
    EXPECT_EQ(s.kvReplicas, 1);
    EXPECT_EQ(s.intermediate, 512);
    EXPECT_EQ(s.interBegin, 512 * r);
    EXPECT_EQ(s.vocabBegin, 16384 * r);
    EXPECT_EQ(s.vocabCount, 16384);
  }
  EXPECT_TRUE(TensorShard::of(smolLM2(), 0, 1).isWhole());
}

TEST(TensorShard, ReplicatesKVHeadsWhenRanksOutnumberThem) {
  schema::ModelConfig c = smolLM2();
  c.intermediate = 1152; // SmolLM2's 1536 does not split 9 ways
  for (int r = 0; r < 9; ++r) {
    TensorShard s = TensorShard::of(c, r, 9);
    EXPECT_EQ(s.heads, 1);
    EXPECT_EQ(s.kvHeads, 1);
    EXPECT_EQ(s.kvReplicas, 3);
    EXPECT_EQ(s.kvHeadBegin, r / 3); // query heads 3r/3.. share KV head r/3, as without TP
  }
}

TEST(TensorShard, UnevenVocabularyLeavesTheLastRankFewerRows) {
  schema::ModelConfig c = smolLM2();
  c.vocab = 49153;
  TensorShard last = TensorShard::of(c, 2, 3);
  EXPECT_EQ(last.vocabPerRank, 16385);
  EXPECT_EQ(last.vocabBegin, 32770);
  EXPECT_EQ(last.vocabCount, 16383);
}

TEST(TensorShard, RefusesSplitsTheModelDoesNotAllow) {
  EXPECT_EQ(errorOf(smolLM2(), 2),
            "--tensor-parallel-size 2 does not divide the model's 9 attention heads; each rank "
            "takes an equal share, so use a divisor of 9");
  EXPECT_EQ(errorOf(smolLM2(), 9),
            "--tensor-parallel-size 9 does not divide the model's 1536 intermediate size; each "
            "rank takes an equal share, so use a divisor of 1536");
  EXPECT_EQ(errorOf(smolLM2(), 18),
            "--tensor-parallel-size 18 does not divide the model's 9 attention heads; each rank "
            "takes an equal share, so use a divisor of 9");
  schema::ModelConfig c = smolLM2();
  c.intermediate = 1537;
  EXPECT_EQ(errorOf(c, 3),
            "--tensor-parallel-size 3 does not divide the model's 1537 intermediate size; each "
            "rank takes an equal share, so use a divisor of 1537");
  c = smolLM2();
  c.heads = 12;
  c.kvHeads = 4;
  c.intermediate = 1536;
  EXPECT_EQ(errorOf(c, 6), "--tensor-parallel-size 6 and the model's 4 KV heads: one must "
                           "divide the other (KV heads are split, or replicated when there are "
                           "fewer than ranks)");
}

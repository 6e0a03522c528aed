//===- RopeKVStoreTest.cpp - Fused RoPE + KV store against LibTorch -*- C++ -*-===//
//
// The reference is the unfused computation in plain LibTorch ops: x * cos + rotate_half(x) *
// sin on q and k, then the rotated k and v copied into the cache rows of their slots. The
// fused kernel must match it bit for bit, in float32 and bfloat16.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <gtest/gtest.h>

namespace {

torch::Tensor referenceRope(const torch::Tensor &x, const torch::Tensor &cos,
                            const torch::Tensor &sin) {
  const int64_t half = x.size(-1) / 2;
  torch::Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos.unsqueeze(1) + rotated * sin.unsqueeze(1);
}

/// cos/sin [tokens, head_dim] of Llama's default RoPE (theta 10000) at `positions`.
std::pair<torch::Tensor, torch::Tensor> cosSin(const torch::Tensor &positions, int64_t dim,
                                               torch::ScalarType dtype) {
  torch::Tensor invFreq =
      1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, torch::kFloat32) / double(dim));
  torch::Tensor freqs = positions.to(torch::kFloat32).unsqueeze(1) * invFreq.unsqueeze(0);
  torch::Tensor emb = torch::cat({freqs, freqs}, 1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

struct Case {
  int64_t tokens, heads, kvHeads, dim, numBlocks, blockSize;
  torch::ScalarType dtype;
  torch::ScalarType slotType;
};

class RopeKVStoreTest : public ::testing::TestWithParam<Case> {};

TEST_P(RopeKVStoreTest, MatchesUnfusedOpsBitForBit) {
  const Case c = GetParam();
  torch::manual_seed(7);
  // q, k and v as views of one fused projection output, as the model hands them over.
  const int64_t qw = c.heads * c.dim, kw = c.kvHeads * c.dim;
  torch::Tensor qkv = torch::randn({c.tokens, qw + 2 * kw}).to(c.dtype);
  torch::Tensor q = qkv.narrow(1, 0, qw).view({c.tokens, c.heads, c.dim});
  torch::Tensor k = qkv.narrow(1, qw, kw).view({c.tokens, c.kvHeads, c.dim});
  torch::Tensor v = qkv.narrow(1, qw + kw, kw).view({c.tokens, c.kvHeads, c.dim});
  auto [cos, sin] = cosSin(torch::randint(0, 4096, {c.tokens}, torch::kInt64), c.dim, c.dtype);
  // Distinct random slots; every fifth token skipped (slot -1), as padding rows are.
  torch::Tensor slots =
      torch::randperm(c.numBlocks * c.blockSize, torch::kInt64).narrow(0, 0, c.tokens).clone();
  for (int64_t r = 0; r < c.tokens; r += 5)
    slots[r] = -1;
  slots = slots.to(c.slotType);

  torch::Tensor kCache = torch::randn({c.numBlocks, c.blockSize, c.kvHeads, c.dim}).to(c.dtype);
  torch::Tensor vCache = torch::randn_like(kCache);
  torch::Tensor kExpected = kCache.clone(), vExpected = vCache.clone();
  torch::Tensor qExpected = referenceRope(q, cos, sin);
  torch::Tensor kRotated = referenceRope(k, cos, sin);
  torch::Tensor valid = (slots >= 0).nonzero().squeeze(1);
  torch::Tensor validSlots = slots.to(torch::kInt64).index_select(0, valid);
  kExpected.view({-1, c.kvHeads, c.dim})
      .index_copy_(0, validSlots, kRotated.index_select(0, valid));
  vExpected.view({-1, c.kvHeads, c.dim}).index_copy_(0, validSlots, v.index_select(0, valid));

  torch::Tensor qOut = nnsc::ropeAndStoreKV(q, k, v, cos, sin, kCache, vCache, slots);
  EXPECT_TRUE(qOut.is_contiguous());
  EXPECT_TRUE(torch::equal(qOut, qExpected))
      << "max |diff| " << (qOut.to(torch::kFloat32) - qExpected.to(torch::kFloat32)).abs().max();
  EXPECT_TRUE(torch::equal(kCache, kExpected));
  EXPECT_TRUE(torch::equal(vCache, vExpected));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeKVStoreTest,
    ::testing::Values(Case{1, 9, 3, 64, 4, 16, torch::kFloat32, torch::kInt32},
                      Case{64, 9, 3, 64, 8, 16, torch::kFloat32, torch::kInt64},
                      Case{300, 9, 3, 64, 32, 16, torch::kFloat32, torch::kInt32},
                      Case{64, 9, 3, 64, 8, 16, torch::kBFloat16, torch::kInt32},
                      Case{300, 8, 8, 128, 32, 16, torch::kBFloat16, torch::kInt64},
                      Case{17, 4, 1, 32, 3, 8, torch::kFloat32, torch::kInt32}));

struct Inputs {
  torch::Tensor q = torch::randn({4, 4, 8});
  torch::Tensor k = torch::randn({4, 2, 8});
  torch::Tensor v = torch::randn({4, 2, 8});
  torch::Tensor cos = torch::randn({4, 8});
  torch::Tensor sin = torch::randn({4, 8});
  torch::Tensor kCache = torch::zeros({2, 4, 2, 8});
  torch::Tensor vCache = torch::zeros({2, 4, 2, 8});
  torch::Tensor slots = torch::arange(4, torch::kInt32);

  void run() { nnsc::ropeAndStoreKV(q, k, v, cos, sin, kCache, vCache, slots); }
};

void expectError(Inputs in, const std::string &message) {
  try {
    in.run();
    ADD_FAILURE() << "no error, expected one containing '" << message << "'";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find(message), std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST(RopeKVStoreErrors, NameWhatIsWrong) {
  Inputs ok;
  ok.run();

  Inputs slot;
  slot.slots[2] = 8;
  expectError(slot, "slotMapping[2] = 8 is outside the cache's 8 slots");

  Inputs shape;
  shape.v = torch::randn({4, 2, 4});
  expectError(shape, "key and value must both be");

  Inputs dtype;
  dtype.v = dtype.v.to(torch::kBFloat16);
  expectError(dtype, "must have one dtype");

  Inputs cacheDtype;
  cacheDtype.kCache = cacheDtype.kCache.to(torch::kBFloat16);
  cacheDtype.vCache = cacheDtype.vCache.to(torch::kBFloat16);
  expectError(cacheDtype, "must have one dtype");

  Inputs cos;
  cos.cos = torch::randn({3, 8});
  expectError(cos, "cos and sin must be [4, 8]");

  Inputs odd;
  odd.q = torch::randn({4, 4, 7});
  odd.k = torch::randn({4, 2, 7});
  odd.v = torch::randn({4, 2, 7});
  expectError(odd, "head_dim must be even");

  Inputs heads;
  heads.kCache = torch::zeros({2, 4, 3, 8});
  heads.vCache = torch::zeros({2, 4, 3, 8});
  expectError(heads, "key rows are [2, 8] but cache rows are [3, 8]");

  Inputs slotsShape;
  slotsShape.slots = torch::arange(3, torch::kInt32);
  expectError(slotsShape, "slotMapping must be [4]");

  Inputs slotsType;
  slotsType.slots = torch::arange(4, torch::kFloat32);
  expectError(slotsType, "slotMapping must be int32 or int64");
}

} // namespace

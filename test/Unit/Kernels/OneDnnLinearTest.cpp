//===- OneDnnLinearTest.cpp - oneDNN products and their packing cache -*- C++ -*-===//

#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Layers/Linear.h"

#include <gtest/gtest.h>

namespace {

torch::Tensor reference(const torch::Tensor &x, const torch::Tensor &w, const torch::Tensor &b) {
  torch::Tensor y = at::matmul(x.to(torch::kFloat64), w.to(torch::kFloat64).t());
  return b.defined() ? y + b.to(torch::kFloat64) : y;
}

double relErr(const torch::Tensor &got, const torch::Tensor &want) {
  return ((got.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max().item<double>();
}

/// Whether products of `dtype` over GemvMaxRows rows go to oneDNN in this build, environment
/// and CPU (it needs AVX-512).
bool oneDnnInUse(torch::ScalarType dtype = torch::kFloat32) {
  return nnsc::oneDnnLinearApplies(torch::zeros({nnsc::GemvMaxRows + 1, 4}, dtype),
                                   torch::zeros({4, 4}, dtype));
}

class OneDnnLinear : public ::testing::TestWithParam<torch::ScalarType> {
protected:
  void SetUp() override {
    if (!oneDnnInUse(GetParam()))
      GTEST_SKIP() << "LibTorch without oneDNN (or NNSC_GEMM=libtorch, or a CPU without AVX-512): "
                      "linear() uses at::linear";
    torch::manual_seed(0);
  }
  double tolerance(int64_t cols) const {
    return GetParam() == torch::kBFloat16 ? 1e-2 : 1e-6 * std::sqrt(double(cols)) * 4;
  }
};

TEST_P(OneDnnLinear, LongBatchesMatchDouble) {
  const auto dtype = GetParam();
  for (int64_t batch : {nnsc::GemvMaxRows + 1, int64_t(64), int64_t(300)})
    for (int64_t rows : {1, 7, 576, 1536})
      for (int64_t cols : {5, 64, 576}) {
        torch::Tensor x = torch::randn({batch, cols}).to(dtype);
        torch::Tensor w = torch::randn({rows, cols}).to(dtype);
        torch::Tensor b = torch::randn({rows}).to(dtype);
        for (bool withBias : {false, true}) {
          torch::Tensor bias = withBias ? b : torch::Tensor();
          torch::Tensor got = nnsc::linear(x, w, bias);
          ASSERT_EQ(got.scalar_type(), dtype);
          ASSERT_EQ(got.sizes(), (std::vector<int64_t>{batch, rows}));
          EXPECT_LE(relErr(got, reference(x, w, bias)), tolerance(cols))
              << "batch=" << batch << " rows=" << rows << " cols=" << cols << " bias=" << withBias;
        }
      }
}

/// bf16 only: LibTorch's fp32 linear is MKL, which sums in another order.
TEST(OneDnnLinearBF16, MatchesLibTorchExactly) {
  if (!oneDnnInUse(torch::kBFloat16))
    GTEST_SKIP() << "LibTorch without oneDNN (or NNSC_GEMM=libtorch, or a CPU without AVX-512): "
                    "linear() uses at::linear";
  torch::manual_seed(0);
  // LibTorch's own bf16 linear is oneDNN too: same products, same fp32 sums, same rounding.
  torch::Tensor x = torch::randn({40, 576}).to(torch::kBFloat16);
  torch::Tensor w = torch::randn({1536, 576}).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(nnsc::linear(x, w), at::linear(x, w)));
  torch::Tensor acc = torch::randn({40, 1536}).to(torch::kBFloat16);
  torch::Tensor want = acc.addmm(x, w.t());
  nnsc::linearAdd(acc, x, w);
  EXPECT_TRUE(torch::equal(acc, want));
}

TEST_P(OneDnnLinear, AddAccumulatesIntoStridedRows) {
  const auto dtype = GetParam();
  torch::Tensor x = torch::randn({33, 1536}).to(dtype);
  torch::Tensor w = torch::randn({576, 1536}).to(dtype);
  torch::Tensor buffer = torch::randn({33, 700}).to(dtype);
  torch::Tensor acc = buffer.narrow(1, 100, 576);
  torch::Tensor want = acc.to(torch::kFloat64) + reference(x, w, {});
  torch::Tensor before = buffer.clone();
  nnsc::linearAdd(acc, x, w);
  EXPECT_LE(relErr(acc, want), tolerance(1536));
  EXPECT_TRUE(torch::equal(buffer.narrow(1, 0, 100), before.narrow(1, 0, 100)));
  EXPECT_TRUE(torch::equal(buffer.narrow(1, 676, 24), before.narrow(1, 676, 24)));
}

TEST_P(OneDnnLinear, AddIntoAnAccumulatorNothingElseSees) {
  // acc may be rebound to the sum: only its value is checked.
  const auto dtype = GetParam();
  torch::Tensor x = torch::randn({40, 576}).to(dtype);
  torch::Tensor w = torch::randn({576, 576}).to(dtype);
  torch::Tensor acc = torch::randn({40, 576}).to(dtype);
  torch::Tensor want = acc.to(torch::kFloat64) + reference(x, w, {});
  nnsc::linearAdd(acc, x, w);
  EXPECT_LE(relErr(acc, want), tolerance(576));
}

TEST_P(OneDnnLinear, AddSeenThroughOtherReferencesToTheAccumulator) {
  // Another tensor or a view shares acc's memory: the sum must land in that memory.
  const auto dtype = GetParam();
  torch::Tensor x = torch::randn({40, 576}).to(dtype);
  torch::Tensor w = torch::randn({576, 576}).to(dtype);
  for (bool view : {false, true}) {
    torch::Tensor acc = torch::randn({40, 576}).to(dtype);
    torch::Tensor other = view ? acc.narrow(0, 10, 5) : acc;
    torch::Tensor want = acc.to(torch::kFloat64) + reference(x, w, {});
    nnsc::linearAdd(acc, x, w);
    EXPECT_LE(relErr(acc, want), tolerance(576)) << "view=" << view;
    EXPECT_LE(relErr(other, view ? want.narrow(0, 10, 5) : want), tolerance(576))
        << "view=" << view;
  }
}

TEST_P(OneDnnLinear, RowSlicesOfAFusedWeight) {
  const auto dtype = GetParam();
  // q, k and v are row slices of one fused matrix, made afresh on each call: each slice is
  // packed once and computes with its own rows.
  torch::Tensor qkv = torch::randn({960, 576}).to(dtype);
  torch::Tensor x = torch::randn({20, 576}).to(dtype);
  const size_t before = nnsc::oneDnnPackedWeights();
  for (int repeat = 0; repeat < 3; ++repeat)
    for (auto [begin, count] : {std::pair<int64_t, int64_t>{0, 576}, {576, 192}, {768, 192}}) {
      torch::Tensor w = qkv.narrow(0, begin, count);
      EXPECT_LE(relErr(nnsc::linear(x, w), reference(x, w, {})), tolerance(576))
          << "begin=" << begin;
    }
  EXPECT_EQ(nnsc::oneDnnPackedWeights(), before + 3);
}

TEST_P(OneDnnLinear, FreedWeightsLeaveTheCache) {
  const auto dtype = GetParam();
  torch::Tensor x = torch::randn({20, 64}).to(dtype);
  const size_t before = nnsc::oneDnnPackedWeights();
  // New weights may land on the memory of freed ones; each product must use its own.
  for (int i = 0; i < 20; ++i) {
    torch::Tensor w = torch::randn({32, 64}).to(dtype);
    EXPECT_LE(relErr(nnsc::linear(x, w), reference(x, w, {})), tolerance(64)) << "i=" << i;
  }
  EXPECT_LE(nnsc::oneDnnPackedWeights(), before + 1);
}

TEST_P(OneDnnLinear, PackedAheadIsPackedOnce) {
  const auto dtype = GetParam();
  torch::Tensor w = torch::randn({48, 64}).to(dtype);
  torch::Tensor x = torch::randn({20, 64}).to(dtype);
  const size_t before = nnsc::oneDnnPackedWeights();
  nnsc::oneDnnPack(w);
  EXPECT_EQ(nnsc::oneDnnPackedWeights(), before + 1);
  // The product finds the packed copy, and the copy is of this weight.
  EXPECT_LE(relErr(nnsc::linear(x, w), reference(x, w, {})), tolerance(64));
  EXPECT_EQ(nnsc::oneDnnPackedWeights(), before + 1);
  // Nothing is packed for a weight oneDNN would not serve.
  nnsc::oneDnnPack(torch::randn({48, 64}, torch::kFloat64));
  nnsc::oneDnnPack(torch::randn({64, 48}).to(dtype).t());
  EXPECT_EQ(nnsc::oneDnnPackedWeights(), before + 1);
}

TEST_P(OneDnnLinear, WeightWrittenInPlaceIsRepacked) {
  const auto dtype = GetParam();
  torch::Tensor x = torch::randn({20, 64}).to(dtype);
  torch::Tensor w = torch::randn({32, 64}).to(dtype);
  nnsc::linear(x, w);
  w.mul_(-2);
  EXPECT_LE(relErr(nnsc::linear(x, w), reference(x, w, {})), tolerance(64));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OneDnnLinear, ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const auto &info) {
                           return info.param == torch::kFloat32 ? "F32" : "BF16";
                         });

} // namespace

//===- GemvTest.cpp - GEMV linears against LibTorch in double ---*- C++ -*-===//

#include "nnsc/Runtime/Kernels/Gemv.h"
#include "nnsc/Runtime/Layers/Linear.h"

#include <gtest/gtest.h>

namespace {

/// x @ w^T (+ bias) computed in double from the same (rounded) inputs.
torch::Tensor reference(const torch::Tensor &x, const torch::Tensor &w, const torch::Tensor &b) {
  torch::Tensor y = at::matmul(x.to(torch::kFloat64), w.to(torch::kFloat64).t());
  return b.defined() ? y + b.to(torch::kFloat64) : y;
}

class GemvLinear : public ::testing::TestWithParam<torch::ScalarType> {
protected:
  void SetUp() override {
    if (!nnsc::kernels::gemvSupported())
      GTEST_SKIP() << "no AVX-512 on this CPU: linear() uses LibTorch";
    torch::manual_seed(0);
  }
  /// fp32 sums of `cols` products differ from double by a few ulps of the magnitude; a bf16
  /// output is rounded once, to 8 bits of mantissa.
  double tolerance(int64_t cols) const {
    return GetParam() == torch::kBFloat16 ? 1e-2 : 1e-6 * std::sqrt(double(cols)) * 4;
  }
};

TEST_P(GemvLinear, MatchesDoubleOverShapes) {
  const auto dtype = GetParam();
  // Rows and columns off the 4-row block and the 16-lane vector; batches off the 4-row block;
  // big enough to be split across the pool.
  for (int64_t rows : {1, 3, 4, 17, 960, 3072})
    for (int64_t cols : {5, 16, 33, 576})
      for (int64_t batch : {int64_t(1), int64_t(2), int64_t(5), int64_t(9), nnsc::GemvMaxRows}) {
        torch::Tensor x = torch::randn({batch, cols}).to(dtype);
        torch::Tensor w = torch::randn({rows, cols}).to(dtype);
        torch::Tensor b = torch::randn({rows}).to(dtype);
        for (bool withBias : {false, true}) {
          torch::Tensor got = nnsc::linear(x, w, withBias ? b : torch::Tensor());
          ASSERT_EQ(got.scalar_type(), dtype);
          torch::Tensor want = reference(x, w, withBias ? b : torch::Tensor());
          double err = ((got.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max()
                           .item<double>();
          EXPECT_LE(err, tolerance(cols))
              << "rows=" << rows << " cols=" << cols << " batch=" << batch
              << " bias=" << withBias;
        }
      }
}

TEST_P(GemvLinear, AddAccumulatesIntoStridedRows) {
  const auto dtype = GetParam();
  for (int64_t batch : {1, 3, 8}) {
    torch::Tensor x = torch::randn({batch, 1536}).to(dtype);
    torch::Tensor w = torch::randn({576, 1536}).to(dtype);
    // The accumulator is a column slice of a wider buffer: rows are 700 elements apart.
    torch::Tensor buffer = torch::randn({batch, 700}).to(dtype);
    torch::Tensor acc = buffer.narrow(1, 100, 576);
    torch::Tensor want = acc.to(torch::kFloat64) + reference(x, w, {});
    torch::Tensor before = buffer.clone();
    nnsc::linearAdd(acc, x, w);
    double err = ((acc.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max()
                     .item<double>();
    EXPECT_LE(err, tolerance(1536)) << "batch=" << batch;
    EXPECT_TRUE(torch::equal(buffer.narrow(1, 0, 100), before.narrow(1, 0, 100)));
    EXPECT_TRUE(torch::equal(buffer.narrow(1, 676, 24), before.narrow(1, 676, 24)));
  }
}

TEST_P(GemvLinear, StridedInputRows) {
  const auto dtype = GetParam();
  // q rows of a fused qkv output: row stride wider than the columns read.
  torch::Tensor qkv = torch::randn({4, 960}).to(dtype);
  torch::Tensor x = qkv.narrow(1, 0, 576);
  torch::Tensor w = torch::randn({576, 576}).to(dtype);
  torch::Tensor got = nnsc::linear(x, w);
  double err = ((got.to(torch::kFloat64) - reference(x, w, {})).abs() /
                (reference(x, w, {}).abs() + 1))
                   .max()
                   .item<double>();
  EXPECT_LE(err, tolerance(576));
}

TEST_P(GemvLinear, LongBatchesUseLibTorch) {
  const auto dtype = GetParam();
  torch::Tensor x = torch::randn({nnsc::GemvMaxRows + 1, 64}).to(dtype);
  torch::Tensor w = torch::randn({32, 64}).to(dtype);
  EXPECT_TRUE(torch::equal(nnsc::linear(x, w), at::linear(x, w)));
}

TEST_P(GemvLinear, BF16RoundsToNearestEven) {
  if (GetParam() != torch::kBFloat16)
    GTEST_SKIP() << "bf16 only";
  // 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7: it rounds to even (1); 1 + 3 * 2^-8
  // lies halfway between 1 + 2^-7 and 1 + 2^-6 and rounds to even (1 + 2^-6).
  torch::Tensor x = torch::tensor({{1.0f, 1.0f}}).to(torch::kBFloat16);
  torch::Tensor w = torch::tensor({{1.0f, 1.0f / 256}, {1.0f, 3.0f / 256}}).to(torch::kBFloat16);
  torch::Tensor got = nnsc::linear(x, w).to(torch::kFloat32);
  EXPECT_EQ(got[0][0].item<float>(), 1.0f);
  EXPECT_EQ(got[0][1].item<float>(), 1.0f + 1.0f / 64);
}

TEST(GemvLinearErrors, ShapeMismatchIsReported) {
  torch::Tensor x = torch::randn({1, 8});
  torch::Tensor w = torch::randn({4, 9});
  try {
    nnsc::linear(x, w);
    FAIL() << "expected an error";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("does not match weight"), std::string::npos);
  }
  torch::Tensor acc = torch::zeros({2, 4});
  EXPECT_THROW(nnsc::linearAdd(acc, torch::randn({1, 9}), w), c10::Error);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemvLinear,
                         ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const auto &info) {
                           return info.param == torch::kFloat32 ? "F32" : "BF16";
                         });

} // namespace

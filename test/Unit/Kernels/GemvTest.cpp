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
          double err =
              ((got.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max().item<double>();
          EXPECT_LE(err, tolerance(cols))
              << "rows=" << rows << " cols=" << cols << " batch=" << batch << " bias=" << withBias;
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
    double err = ((acc.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max().item<double>();
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
  double err =
      ((got.to(torch::kFloat64) - reference(x, w, {})).abs() / (reference(x, w, {}).abs() + 1))
          .max()
          .item<double>();
  EXPECT_LE(err, tolerance(576));
}

TEST(GemvLinearBF16, RoundsToNearestEven) {
  if (!nnsc::kernels::gemvSupported())
    GTEST_SKIP() << "no AVX-512 on this CPU: linear() uses LibTorch";
  // 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7: it rounds to even (1); 1 + 3 * 2^-8
  // lies halfway between 1 + 2^-7 and 1 + 2^-6 and rounds to even (1 + 2^-6).
  torch::Tensor x = torch::tensor({{1.0f, 1.0f}}).to(torch::kBFloat16);
  torch::Tensor w = torch::tensor({{1.0f, 1.0f / 256}, {1.0f, 3.0f / 256}}).to(torch::kBFloat16);
  torch::Tensor got = nnsc::linear(x, w).to(torch::kFloat32);
  EXPECT_EQ(got[0][0].item<float>(), 1.0f);
  EXPECT_EQ(got[0][1].item<float>(), 1.0f + 1.0f / 64);
}

/// Runs one bf16 kernel on the whole product x @ w^T (+ bias).
torch::Tensor runBF16(void (*kernel)(const nnsc::kernels::GemvArgs<uint16_t> &, int64_t, int64_t),
                      const torch::Tensor &x, const torch::Tensor &w, const torch::Tensor &b) {
  torch::Tensor y = torch::empty({x.size(0), w.size(0)}, x.options());
  nnsc::kernels::GemvArgs<uint16_t> a;
  a.w = static_cast<const uint16_t *>(w.data_ptr());
  a.x = static_cast<const uint16_t *>(x.data_ptr());
  a.y = static_cast<uint16_t *>(y.data_ptr());
  a.bias = b.defined() ? static_cast<const uint16_t *>(b.data_ptr()) : nullptr;
  a.rows = w.size(0);
  a.cols = w.size(1);
  a.batch = x.size(0);
  a.xStride = x.stride(0);
  a.yStride = y.stride(0);
  kernel(a, 0, a.rows);
  return y;
}

TEST(GemvBF16Dot, MatchesLibTorchAndTheWideningKernel) {
  if (!nnsc::kernels::gemvBF16DotSupported())
    GTEST_SKIP() << "no AVX512-BF16 on this CPU: linear() uses the widening kernel";
  torch::manual_seed(1);
  // Columns off the 32-element step of vdpbf16ps (odd ones leave half a pair in the tail).
  for (int64_t cols : {1, 7, 31, 32, 33, 63, 576, 1536})
    for (int64_t rows : {1, 5, 576})
      for (int64_t batch : {1, 3, 4, 16}) {
        torch::Tensor x = torch::randn({batch, cols}).to(torch::kBFloat16);
        torch::Tensor w = torch::randn({rows, cols}).to(torch::kBFloat16);
        torch::Tensor b = torch::randn({rows}).to(torch::kBFloat16);
        torch::Tensor dot = runBF16(nnsc::kernels::gemvBF16Dot, x, w, b);
        torch::Tensor wide = runBF16(nnsc::kernels::gemvBF16, x, w, b);
        torch::Tensor torchY = at::linear(x, w, b);
        // Both are fp32 sums of exact products rounded once to bf16: they differ from each
        // other and from LibTorch only by the sum order, within one bf16 rounding step.
        torch::Tensor want = reference(x, w, b);
        for (const auto &[name, got] : {std::pair<const char *, torch::Tensor>{"dot", dot},
                                        {"widen", wide},
                                        {"torch", torchY}}) {
          double err =
              ((got.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max().item<double>();
          EXPECT_LE(err, 1e-2) << name << " rows=" << rows << " cols=" << cols
                               << " batch=" << batch;
        }
        double diff = ((dot.to(torch::kFloat64) - torchY.to(torch::kFloat64)).abs() /
                       (torchY.to(torch::kFloat64).abs() + 1))
                          .max()
                          .item<double>();
        EXPECT_LE(diff, 1.6e-2) << "rows=" << rows << " cols=" << cols << " batch=" << batch;
      }
}

TEST(GemvBF16Dot, LinearUsesItAndAccumulates) {
  if (!nnsc::kernels::gemvBF16DotSupported())
    GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  torch::manual_seed(2);
  torch::Tensor x = torch::randn({2, 576}).to(torch::kBFloat16);
  torch::Tensor w = torch::randn({1536, 576}).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(nnsc::linear(x, w), runBF16(nnsc::kernels::gemvBF16Dot, x, w, {})));
  torch::Tensor acc = torch::randn({2, 1536}).to(torch::kBFloat16);
  torch::Tensor want = acc.to(torch::kFloat64) + reference(x, w, {});
  nnsc::linearAdd(acc, x, w);
  EXPECT_LE(((acc.to(torch::kFloat64) - want).abs() / (want.abs() + 1)).max().item<double>(), 1e-2);
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

INSTANTIATE_TEST_SUITE_P(Dtypes, GemvLinear, ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const auto &info) {
                           return info.param == torch::kFloat32 ? "F32" : "BF16";
                         });

} // namespace

//===- RMSNormBF16Test.cpp - bf16 RMSNorm against transformers' order -*- C++ -*-===//

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include <gtest/gtest.h>

namespace {

/// LlamaRMSNorm.forward for a bf16 input, in LibTorch ops.
torch::Tensor transformersOrder(const torch::Tensor &x, const torch::Tensor &w, double eps) {
  torch::Tensor h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return w * h.to(torch::kBFloat16);
}

TEST(RMSNormBF16, MatchesTransformersOrder) {
  torch::manual_seed(3);
  for (int64_t cols : {1, 7, 64, 576, 1536})
    for (int64_t rows : {1, 5, 33}) {
      torch::Tensor x = (torch::randn({rows, cols}) * 3).to(torch::kBFloat16);
      torch::Tensor w = (torch::rand({cols}) + 0.5).to(torch::kBFloat16);
      torch::Tensor got = nnsc::rmsNorm(x, w, 1e-5);
      torch::Tensor want = transformersOrder(x, w, 1e-5);
      ASSERT_EQ(got.scalar_type(), torch::kBFloat16);
      // The mean square is summed in another order (in double), so the scale can differ in
      // its last fp32 bit and flip a bf16 rounding: at most one bf16 step at either rounding.
      const double err = ((got.to(torch::kFloat64) - want.to(torch::kFloat64)).abs() /
                          (want.to(torch::kFloat64).abs() + 1e-3))
                             .max()
                             .item<double>();
      EXPECT_LE(err, 2.0 / 128) << "rows=" << rows << " cols=" << cols;
      const double same = got.eq(want).to(torch::kFloat64).mean().item<double>();
      EXPECT_GE(same, 0.99) << "rows=" << rows << " cols=" << cols;
    }
}

TEST(RMSNormBF16, StridedInputAndNaN) {
  torch::Tensor wide = torch::randn({4, 100}).to(torch::kBFloat16);
  torch::Tensor x = wide.narrow(1, 10, 64);
  torch::Tensor w = torch::ones({64}).to(torch::kBFloat16);
  EXPECT_TRUE(torch::allclose(nnsc::rmsNorm(x, w, 1e-6).to(torch::kFloat32),
                              transformersOrder(x, w, 1e-6).to(torch::kFloat32), 1e-2, 1e-2));
  torch::Tensor bad = torch::randn({2, 8}).to(torch::kBFloat16);
  bad[0][3] = std::nanf("");
  torch::Tensor got = nnsc::rmsNorm(bad, torch::ones({8}).to(torch::kBFloat16), 1e-6);
  EXPECT_TRUE(got[0].isnan().all().item<bool>());
  EXPECT_FALSE(got[1].isnan().any().item<bool>());
}

TEST(RMSNormBF16, RejectsMixedDtypes) {
  torch::Tensor x = torch::randn({2, 8}).to(torch::kBFloat16);
  EXPECT_THROW(nnsc::rmsNorm(x, torch::ones({8}), 1e-6), c10::Error);
}

} // namespace

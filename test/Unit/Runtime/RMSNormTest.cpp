//===- RMSNormTest.cpp - RMSNorm against LibTorch ---------------*- C++ -*-===//

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include <gtest/gtest.h>

namespace {

/// The Hugging Face LlamaRMSNorm formula written with LibTorch ops.
torch::Tensor referenceRMSNorm(const torch::Tensor &x, const torch::Tensor &w, double eps) {
  torch::Tensor variance = x.pow(2).mean(-1, /*keepdim=*/true);
  return w * (x * torch::rsqrt(variance + eps));
}

TEST(RMSNorm, MatchesLibTorchFormula) {
  torch::manual_seed(0);
  for (int64_t hidden : {1, 7, 576, 4096}) {
    torch::Tensor x = torch::randn({5, hidden});
    torch::Tensor w = torch::randn({hidden});
    torch::Tensor got = nnsc::rmsNorm(x, w, 1e-5);
    torch::Tensor want = referenceRMSNorm(x, w, 1e-5);
    EXPECT_TRUE(torch::allclose(got, want, /*rtol=*/1e-5, /*atol=*/1e-6))
        << "hidden=" << hidden << " max abs diff " << (got - want).abs().max().item<float>();
  }
}

// Enough rows to be split over the pool's threads (RowSpans.h), in both dtypes: every row
// normalized once, by its own sum. bf16 against the fp32 formula rounded as rmsNormBF16
// rounds (normalized, rounded, times the weight, rounded).
TEST(RMSNorm, RowsSplitOverThreadsMatchTheFormula) {
  torch::manual_seed(1);
  const int saved = at::get_num_threads();
  at::set_num_threads(2);
  for (int64_t rows : {57, 301}) {
    torch::Tensor x = torch::randn({rows, 576}) * torch::rand({rows, 1}) * 4;
    torch::Tensor w = torch::randn({576});
    torch::Tensor got = nnsc::rmsNorm(x, w, 1e-5);
    EXPECT_TRUE(torch::allclose(got, referenceRMSNorm(x, w, 1e-5), 1e-5, 1e-6)) << rows;
    torch::Tensor xb = x.to(torch::kBFloat16), wb = w.to(torch::kBFloat16);
    torch::Tensor normalized =
        (xb.to(torch::kFloat32) * torch::rsqrt(xb.to(torch::kFloat32).pow(2).mean(-1, true) + 1e-5))
            .to(torch::kBFloat16);
    torch::Tensor wantBf16 = (wb * normalized).to(torch::kFloat32);
    torch::Tensor gotBf16 = nnsc::rmsNorm(xb, wb, 1e-5).to(torch::kFloat32);
    EXPECT_TRUE(torch::allclose(gotBf16, wantBf16, 1e-2, 1e-2))
        << rows << ": max abs diff " << (gotBf16 - wantBf16).abs().max().item<float>();
  }
  at::set_num_threads(saved);
}

TEST(RMSNorm, NonContiguousInput) {
  torch::Tensor x = torch::randn({64, 8}).t(); // [8, 64], strided
  torch::Tensor w = torch::ones({64});
  EXPECT_TRUE(torch::allclose(nnsc::rmsNorm(x, w, 1e-6), referenceRMSNorm(x, w, 1e-6), 1e-5, 1e-6));
}

TEST(RMSNorm, RejectsWrongWeightShape) {
  torch::Tensor x = torch::randn({2, 16});
  torch::Tensor w = torch::randn({15});
  try {
    nnsc::rmsNorm(x, w, 1e-5);
    FAIL() << "expected an error for a [15] weight on a [2, 16] input";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("weight must be [16]"), std::string::npos) << e.what();
  }
}

} // namespace

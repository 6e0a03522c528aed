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

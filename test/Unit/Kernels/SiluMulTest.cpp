//===- SiluMulTest.cpp - fused SiLU(gate) * up against LibTorch -*- C++ -*-===//

#include "nnsc/Runtime/Kernels/SiluMul.h"
#include "nnsc/Runtime/Layers/SiluMul.h"

#include <gtest/gtest.h>

namespace {

/// NaN-aware bitwise equality of two tensors of one dtype.
bool sameBits(const torch::Tensor &a, const torch::Tensor &b) {
  return a.sizes() == b.sizes() && (a.eq(b) | (a.isnan() & b.isnan())).all().item<bool>();
}

/// Gate values over SiLU's whole range: the polynomial region, both saturations, the exp
/// underflow and overflow cut-offs, zeros, infinities and NaN.
torch::Tensor gateValues(int64_t rows, int64_t n, torch::ScalarType dtype) {
  torch::Tensor g = torch::randn({rows, n}) * 4;
  torch::Tensor flat = g.view({-1});
  const float specials[] = {0.0f,    -0.0f,   1e-30f, -1e-30f, 88.0f,    -88.0f,    99.9f, 100.5f,
                            -103.9f, -104.5f, 120.0f, -120.0f, INFINITY, -INFINITY, NAN};
  for (int64_t i = 0; i < flat.size(0) && i < int64_t(std::size(specials)); ++i)
    flat[i * 7 % flat.size(0)] = specials[i];
  return g.to(dtype);
}

class SiluMulTest : public ::testing::TestWithParam<torch::ScalarType> {
protected:
  void SetUp() override { torch::manual_seed(7); }
};

/// The largest distance in units in the last place between two fp32 or bf16 tensors whose
/// NaNs coincide (values of one sign are ordered like their bit patterns).
int64_t maxUlps(const torch::Tensor &a, const torch::Tensor &b) {
  auto ordered = [](const torch::Tensor &t) {
    torch::Tensor bits =
        (t.scalar_type() == torch::kBFloat16 ? t.view(torch::kInt16) : t.view(torch::kInt32))
            .to(torch::kInt64);
    const int64_t sign = t.scalar_type() == torch::kBFloat16 ? 0x8000 : 0x80000000LL;
    bits = bits.bitwise_and(t.scalar_type() == torch::kBFloat16 ? 0xffff : 0xffffffffLL);
    return torch::where(bits >= sign, sign - bits, bits);
  };
  torch::Tensor nan = a.isnan() | b.isnan();
  EXPECT_TRUE(a.isnan().eq(b.isnan()).all().item<bool>());
  return (ordered(a) - ordered(b)).abs().masked_fill(nan, 0).max().item<int64_t>();
}

// Gate and up are the two halves of one fused product, as in the model; rows enough to split
// across the pool. Where LibTorch runs its vectorized loop (whole 32-element chunks of a row)
// the result is LibTorch's bit for bit.
TEST_P(SiluMulTest, EqualsLibTorchVectorLoopBitForBit) {
  const auto dtype = GetParam();
  for (int64_t n : {32, 64, 576, 1536})
    for (int64_t rows : {1, 3, 64}) {
      torch::Tensor gu =
          torch::cat({gateValues(rows, n, dtype), torch::randn({rows, n}).to(dtype)}, 1);
      torch::Tensor g = gu.narrow(1, 0, n), u = gu.narrow(1, n, n);
      torch::Tensor got = nnsc::siluMul(g, u);
      ASSERT_TRUE(got.is_contiguous());
      EXPECT_TRUE(sameBits(got, at::silu(g) * u)) << "rows=" << rows << " n=" << n;
    }
}

// Lengths off the 16-lane vector: LibTorch computes a row's last (n mod 32) elements with
// the C library's expf instead, which can differ by an ulp; the division and the product
// round again, so the results are a few ulps apart at most.
TEST_P(SiluMulTest, WithinAnUlpOfLibTorchOnTails) {
  const auto dtype = GetParam();
  for (int64_t n : {1, 7, 15, 16, 17, 33, 1537})
    for (int64_t rows : {1, 3, 64}) {
      torch::Tensor gu =
          torch::cat({gateValues(rows, n, dtype), torch::randn({rows, n}).to(dtype)}, 1);
      torch::Tensor g = gu.narrow(1, 0, n), u = gu.narrow(1, n, n);
      EXPECT_LE(maxUlps(nnsc::siluMul(g, u), at::silu(g) * u), 4) << "rows=" << rows << " n=" << n;
    }
}

TEST_P(SiluMulTest, PortableLoopEqualsVectorCode) {
  const auto dtype = GetParam();
  const int64_t n = 1000;
  torch::Tensor g = gateValues(1, n, dtype), u = torch::randn({1, n}).to(dtype);
  torch::Tensor vec = torch::empty_like(g), portable = torch::empty_like(g);
  if (dtype == torch::kBFloat16) {
    auto *gp = static_cast<const uint16_t *>(g.data_ptr());
    auto *up = static_cast<const uint16_t *>(u.data_ptr());
    nnsc::kernels::siluMulBF16(gp, up, static_cast<uint16_t *>(vec.data_ptr()), n);
    nnsc::kernels::siluMulBF16Portable(gp, up, static_cast<uint16_t *>(portable.data_ptr()), n);
  } else {
    nnsc::kernels::siluMulF32(g.data_ptr<float>(), u.data_ptr<float>(), vec.data_ptr<float>(), n);
    nnsc::kernels::siluMulF32Portable(g.data_ptr<float>(), u.data_ptr<float>(),
                                      portable.data_ptr<float>(), n);
  }
  EXPECT_TRUE(sameBits(vec, portable));
  EXPECT_TRUE(sameBits(portable, at::silu(g) * u));
}

TEST_P(SiluMulTest, CloseToDoubleSilu) {
  const auto dtype = GetParam();
  torch::Tensor g = (torch::randn({8, 1000}) * 6).to(dtype);
  torch::Tensor u = torch::randn({8, 1000}).to(dtype);
  torch::Tensor exact = g.to(torch::kFloat64) * torch::sigmoid(g.to(torch::kFloat64));
  if (dtype == torch::kBFloat16)
    exact = exact.to(torch::kBFloat16).to(torch::kFloat64);
  exact = exact * u.to(torch::kFloat64);
  torch::Tensor got = nnsc::siluMul(g, u).to(torch::kFloat64);
  // A few fp32 ulps, or one bf16 rounding of the product.
  const double tol = dtype == torch::kBFloat16 ? 1.0 / 256 : 4e-7;
  EXPECT_LE(((got - exact).abs() / (exact.abs() + 1e-30)).max().item<double>(), tol);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SiluMulTest, ::testing::Values(torch::kFloat32, torch::kBFloat16));

TEST(SiluMul, RejectsMismatchedInputs) {
  torch::Tensor g = torch::randn({2, 8});
  EXPECT_THROW(nnsc::siluMul(g, torch::randn({2, 7})), c10::Error);
  EXPECT_THROW(nnsc::siluMul(g, torch::randn({2, 8}).to(torch::kBFloat16)), c10::Error);
  EXPECT_THROW(nnsc::siluMul(torch::randn({8}), torch::randn({8})), c10::Error);
}

TEST(SiluMul, OtherDtypesFallBackToLibTorch) {
  torch::Tensor g = torch::randn({3, 9}, torch::kFloat64),
                u = torch::randn({3, 9}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(nnsc::siluMul(g, u), at::silu(g) * u));
}

} // namespace

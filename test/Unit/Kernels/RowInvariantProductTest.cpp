//===- RowInvariantProductTest.cpp - Products whose rows ignore the batch -*- C++ -*-===//
//
// ProductOrder::RowInvariant (batch-invariant mode, docs/Engine.md): linear() and linearAdd()
// give each row the same bits whatever rows share the product, for every quantized format on
// every row count (the kernels' exact form in tiles of any size, past the quantized row limit
// too) and for dense weights. The default order is allowed to differ; the first test shows it
// does, so the property is not vacuous.
//
//===----------------------------------------------------------------------===//

#include "QuantGemvTestUtil.h"

#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/ProductOrder.h"

namespace {

using namespace nnsc::quant_test;
using nnsc::ProductOrder;
using nnsc::ScopedProductOrder;

/// Row counts that cut the batch into every tile shape (8, 4, 3, 2, 1) and pass the quantized
/// row limit (24 fp32, 16 bf16).
const std::vector<int64_t> RowCounts = {1, 2, 3, 4, 5, 7, 8, 13, 17, 29, 40};

/// Whether every row of linear(x[:n]) equals the same row of linear(x), for every n, and the
/// same for linearAdd into rows that already hold values.
void expectRowsIgnoreTheBatch(const torch::Tensor &x, const torch::Tensor &weight,
                              const QuantizedMatrix &quant, const std::string &what) {
  const torch::Tensor all = nnsc::linear(x, weight, {}, quant);
  const torch::Tensor start = torch::randn({x.size(0), all.size(1)}).to(x.scalar_type());
  torch::Tensor added = start.clone();
  nnsc::linearAdd(added, x, weight, quant);
  for (int64_t n : RowCounts) {
    const torch::Tensor part = nnsc::linear(x.narrow(0, 0, n), weight, {}, quant);
    EXPECT_TRUE(torch::equal(part, all.narrow(0, 0, n))) << what << ": " << n << " rows";
    torch::Tensor partAdded = start.narrow(0, 0, n).clone();
    nnsc::linearAdd(partAdded, x.narrow(0, 0, n), weight, quant);
    EXPECT_TRUE(torch::equal(partAdded, added.narrow(0, 0, n)))
        << what << ": linearAdd of " << n << " rows";
  }
}

class RowInvariantProduct : public QuantKernelTest {};

TEST_P(RowInvariantProduct, QuantizedRowsIgnoreTheBatch) {
  const auto [format, dtype] = GetParam();
  const QuantizedMatrix w = randomMatrix(format, 40, 512);
  const torch::Tensor x = torch::randn({RowCounts.back(), 512}).to(dtype);
  ScopedProductOrder order(ProductOrder::RowInvariant);
  expectRowsIgnoreTheBatch(x, {}, w, formatAndDtypeName({GetParam(), 0}));
}

INSTANTIATE_TEST_SUITE_P(
    Formats, RowInvariantProduct,
    ::testing::Combine(::testing::Values(QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0,
                                         QuantFormat::Q5_1, QuantFormat::Q8_0, QuantFormat::IQ4_NL,
                                         QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K,
                                         QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_XS),
                       ::testing::Values(torch::kFloat32, torch::kBFloat16)),
    formatAndDtypeName);

TEST(RowInvariantProduct, DenseRowsIgnoreTheBatch) {
  torch::manual_seed(1);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    const torch::Tensor weight = torch::randn({96, 576}).to(dtype);
    const torch::Tensor x = torch::randn({RowCounts.back(), 576}).to(dtype);
    ScopedProductOrder order(ProductOrder::RowInvariant);
    expectRowsIgnoreTheBatch(x, weight, {}, c10::toString(dtype));
  }
}

TEST(RowInvariantProduct, TheDefaultOrderDependsOnTheBatchAndTheScopeRestoresIt) {
  if (supportedIsas().empty())
    GTEST_SKIP() << NoQuantKernels;
  torch::manual_seed(2);
  const QuantizedMatrix w = randomMatrix(QuantFormat::Q4_1, 64, 576);
  const torch::Tensor x = torch::randn({40, 576});
  const torch::Tensor widened = w.widen(torch::kFloat32);
  // By default one row alone takes the blocks' factored form, a batch of 40 a GEMM of the
  // widened weight.
  auto lastRowAloneEqualsInBatch = [&] {
    return torch::equal(nnsc::linear(x.narrow(0, 39, 1), widened, {}, w),
                        nnsc::linear(x, widened, {}, w).narrow(0, 39, 1));
  };
  EXPECT_EQ(nnsc::productOrder(), ProductOrder::Fastest);
  EXPECT_FALSE(lastRowAloneEqualsInBatch());
  {
    ScopedProductOrder order(ProductOrder::RowInvariant);
    EXPECT_TRUE(lastRowAloneEqualsInBatch());
  }
  EXPECT_EQ(nnsc::productOrder(), ProductOrder::Fastest);
}

} // namespace

//===- QuantGemvTest.cpp - Quantized GEMV vs dequantize-then-matmul -*- C++ -*-===//
//
// Every quantized GEMV kernel of the 32-weight formats (each format, each instruction set this
// CPU runs, fp32 and bf16 activations) against LibTorch's float64 matmul of the loader's
// dequantized weights (QuantGemvTestUtil.h, with the error bound), on random blocks and on the
// bundled GGUF file's own blocks. The K-quants are in QuantGemvKQuantTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "ErrorMessage.h"
#include "QuantGemvTestUtil.h"

#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Models/GGUFWeights.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Schema/ModelConfig.h"

#include <filesystem>

namespace {

using nnsc::test::errorOf;

using namespace nnsc::quant_test;

class QuantGemv : public QuantKernelTest {};

TEST_P(QuantGemv, MatchesDequantizedMatmulOverShapes) {
  const auto [format, dtype] = GetParam();
  // One block, odd block counts, real widths.
  expectKernelsMatchOverShapes(format, dtype, {32, 96, 224, 576, 1024});
}

TEST_P(QuantGemv, AccumulatesIntoStridedRowsAndPartialRowRanges) {
  const auto [format, dtype] = GetParam();
  expectAccumulatesIntoStridedRows(format, dtype, 160);
  // Row ranges as the thread pool splits them: each range writes its own outputs only.
  const QuantizedMatrix w = randomMatrix(format, 23, 64);
  const torch::Tensor x = torch::randn({2, 64}).to(dtype);
  torch::Tensor y = torch::zeros({2, 23}, dtype);
  nnsc::kernels::QuantGemvArgs<float> a;
  if (dtype == torch::kFloat32) {
    a.format = format;
    a.w = w.blocks.data_ptr<uint8_t>();
    a.rowBytes = w.blocks.stride(0);
    a.x = x.data_ptr<float>();
    a.y = y.data_ptr<float>();
    a.rows = 23;
    a.cols = 64;
    a.batch = 2;
    a.xStride = 64;
    a.yStride = 23;
    nnsc::kernels::quantGemv(a, 8, 13);
    EXPECT_TRUE(y.narrow(1, 0, 8).eq(0).all().item<bool>());
    EXPECT_TRUE(y.narrow(1, 13, 10).eq(0).all().item<bool>());
    expectClose(y.narrow(1, 8, 5), x, w.narrowRows(8, 5), {}, {}, "rows [8, 13)");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, QuantGemv,
    ::testing::Combine(::testing::Values(QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0,
                                         QuantFormat::Q5_1, QuantFormat::Q8_0, QuantFormat::IQ4_NL),
                       ::testing::Values(torch::kFloat32, torch::kBFloat16)),
    formatAndDtypeName);

TEST(QuantGemvErrors, RejectsColumnsOffTheBlock) {
  nnsc::kernels::QuantGemvArgs<float> a;
  a.cols = 40;
  a.rows = 1;
  a.batch = 1;
  EXPECT_THROW(nnsc::kernels::quantGemv(a, 0, 1), nnsc::InvalidInput);
}

TEST(QuantGemvErrors, QuantizedLinearNamesAMismatchedInput) {
  if (supportedIsas().empty())
    GTEST_SKIP() << NoQuantKernels;
  const QuantizedMatrix w = randomMatrix(QuantFormat::Q4_1, 8, 64);
  EXPECT_FALSE(nnsc::quantizedLinearApplies(torch::randn({1, 96}), w));
  try {
    nnsc::quantizedLinear(torch::randn({1, 96}), w);
    FAIL() << "no error";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot use the quantized weight [8, 64]"),
              std::string::npos)
        << e.what();
  }
}

TEST(QuantizedMatrix, CatAndNarrowRowsFollowTheWidenedRows) {
  torch::manual_seed(1);
  const QuantizedMatrix a = randomMatrix(QuantFormat::Q8_0, 5, 64);
  const QuantizedMatrix b = randomMatrix(QuantFormat::Q8_0, 3, 64);
  const QuantizedMatrix ab = QuantizedMatrix::cat({a, b});
  ASSERT_TRUE(ab.defined());
  EXPECT_TRUE(dequantize(ab).equal(torch::cat({dequantize(a), dequantize(b)})));
  EXPECT_TRUE(dequantize(ab.narrowRows(5, 3)).equal(dequantize(b)));
  EXPECT_TRUE(ab.rest.empty()) << "one format, one part";
  // Fusing needs one width and every part.
  EXPECT_FALSE(QuantizedMatrix::cat({a, randomMatrix(QuantFormat::Q8_0, 3, 96)}).defined());
  EXPECT_FALSE(QuantizedMatrix::cat({a, QuantizedMatrix()}).defined());
}

// An embedding lookup on the blocks (a tied embedding without its widened copy): the rows
// asked for, in that order, repeats included, as the widened rows; an id off the matrix and a
// matrix of two formats are refused.
TEST(QuantizedMatrix, SelectRowsIsALookupOfTheWidenedRows) {
  torch::manual_seed(4);
  QuantizedMatrix m = randomMatrix(QuantFormat::Q4_1, 9, 64);
  nnsc::packQuantized({&m}); // as the loader keeps them: split rows in one region
  const torch::Tensor ids = torch::tensor({7, 0, 7, 3}, torch::kInt64);
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16})
    EXPECT_TRUE(m.selectRows(ids).widen(dtype).equal(m.widen(dtype).index_select(0, ids)))
        << (dtype == torch::kFloat32 ? "fp32" : "bf16");
  EXPECT_EQ(m.selectRows(torch::zeros({0}, torch::kInt64)).rows(), 0);
  EXPECT_THROW(m.selectRows(torch::tensor({9}, torch::kInt64)), c10::Error);
  const QuantizedMatrix mixed = QuantizedMatrix::cat({m, randomMatrix(QuantFormat::Q8_0, 2, 64)});
  EXPECT_NE(errorOf([&] { mixed.selectRows(ids); }).find("2 formats"), std::string::npos);
}

// A fused projection whose parts a file stores in different formats (llama.cpp's Q4_K_M:
// Q5_0 q and k, Q8_0 v) keeps one part per run of a format, and its products, row slices,
// column slices and packing follow the widened rows.
TEST(QuantizedMatrix, PartsOfDifferentFormatsFuseIntoOneMatrix) {
  if (supportedIsas().empty())
    GTEST_SKIP() << NoQuantKernels;
  torch::manual_seed(2);
  const QuantizedMatrix q = randomMatrix(QuantFormat::Q5_0, 12, 96);
  const QuantizedMatrix k = randomMatrix(QuantFormat::Q5_0, 5, 96);
  const QuantizedMatrix v = randomMatrix(QuantFormat::Q8_0, 5, 96);
  QuantizedMatrix qkv = QuantizedMatrix::cat({q, k, v});
  ASSERT_TRUE(qkv.defined());
  ASSERT_EQ(qkv.rest.size(), 1u);
  EXPECT_EQ(qkv.format, QuantFormat::Q5_0);
  EXPECT_EQ(qkv.rest[0].format, QuantFormat::Q8_0);
  EXPECT_EQ(qkv.rows(), 22);
  EXPECT_EQ(qkv.bytes(), q.bytes() + k.bytes() + v.bytes());
  const torch::Tensor dense = torch::cat({dequantize(q), dequantize(k), dequantize(v)});
  EXPECT_TRUE(dequantize(qkv).equal(dense));
  // Row slices inside one part and across the change of format.
  EXPECT_TRUE(dequantize(qkv.narrowRows(12, 5)).equal(dequantize(k)));
  EXPECT_TRUE(qkv.narrowRows(17, 5).rest.empty());
  EXPECT_TRUE(dequantize(qkv.narrowRows(15, 4)).equal(dense.narrow(0, 15, 4)));
  EXPECT_EQ(qkv.narrowRows(22, 0).rows(), 0);
  EXPECT_THROW(qkv.narrowRows(20, 3), c10::Error);
  EXPECT_TRUE(dequantize(qkv.narrowCols(32, 64)).equal(dense.narrow(1, 32, 64)));
  // Fusing again merges neighbours of one format: Q8_0 v then Q8_0 v is one part.
  EXPECT_EQ(QuantizedMatrix::cat({qkv, v}).rest.size(), 1u);
  nnsc::packQuantized({&qkv});
  EXPECT_TRUE(dequantize(qkv).equal(dense)) << "packed";
  const torch::Tensor bias = torch::randn({22});
  for (int64_t batch : {1, 3})
    for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
      const torch::Tensor x = torch::randn({batch, 96}).to(dtype);
      const torch::Tensor b = bias.to(dtype);
      ASSERT_TRUE(nnsc::quantizedLinearApplies(x, qkv));
      expectClose(nnsc::quantizedLinear(x, qkv, b), x, qkv, b, {},
                  "batch " + std::to_string(batch));
      torch::Tensor acc = torch::randn({batch, 22}).to(dtype);
      const torch::Tensor acc0 = acc.clone();
      nnsc::quantizedLinearAdd(acc, x, qkv);
      expectClose(acc, x, qkv, {}, acc0, "accumulate, batch " + std::to_string(batch));
    }
}

// The split-row layout, written out by hand for one Q4_1 row of two blocks: the scales, the
// minimums, then the quants; joining gives the blocks back.
TEST(QuantizedMatrix, SplitRowsPutScalesMinimumsAndQuantsSideBySide) {
  torch::Tensor blocks = torch::arange(40, torch::kUInt8).view({1, 40});
  const QuantizedMatrix m = QuantizedMatrix::fromGgmlBlocks(QuantFormat::Q4_1, blocks, 64);
  std::vector<int64_t> want = {0, 1, 20, 21, 2, 3, 22, 23};
  for (int64_t i = 4; i < 20; ++i)
    want.push_back(i);
  for (int64_t i = 24; i < 40; ++i)
    want.push_back(i);
  EXPECT_TRUE(m.blocks.to(torch::kInt64).view({-1}).equal(torch::tensor(want))) << m.blocks;
  EXPECT_TRUE(m.ggmlBlocks().equal(blocks));
  for (QuantFormat format : {QuantFormat::Q4_0, QuantFormat::Q5_0, QuantFormat::Q5_1,
                             QuantFormat::Q8_0, QuantFormat::IQ4_NL}) {
    const QuantizedMatrix r = randomMatrix(format, 3, 96);
    EXPECT_TRUE(QuantizedMatrix::fromGgmlBlocks(format, r.ggmlBlocks(), 96).blocks.equal(r.blocks));
  }
  // A column slice of whole blocks is the slice of the dequantized weights.
  const QuantizedMatrix r = randomMatrix(QuantFormat::Q4_1, 4, 128);
  EXPECT_TRUE(dequantize(r.narrowCols(32, 64)).equal(dequantize(r).narrow(1, 32, 64)));
  EXPECT_FALSE(r.narrowCols(16, 64).defined());
}

/// A weight known by its blocks only (loaded without its widened copy): products over the
/// quantized path's rows run on oneDNN's copy packed from the blocks ahead
/// (oneDnnPackQuantized), a row range of it on a copy packed from the blocks on first use,
/// with the values the widened weights give. Two formats, as llama.cpp's Q4_K_M q/k/v.
TEST(QuantizedLinear, BlocksOnlyWeightsRunOnTheirPackedCopies) {
  if (supportedIsas().empty())
    GTEST_SKIP() << NoQuantKernels;
  torch::manual_seed(4);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    if (!nnsc::oneDnnServes(dtype))
      continue;
    const char *name = dtype == torch::kFloat32 ? "fp32" : "bf16";
    const QuantizedMatrix w = QuantizedMatrix::cat(
        {randomMatrix(QuantFormat::Q5_0, 48, 96), randomMatrix(QuantFormat::Q8_0, 16, 96)});
    const torch::Tensor widened = w.widen(dtype);
    EXPECT_TRUE(widened.equal(dequantize(w).to(dtype))) << name;
    nnsc::oneDnnPackQuantized(w, dtype);
    const size_t packed = nnsc::oneDnnPackedWeights();
    const torch::Tensor bias = torch::randn({64}).to(dtype);
    const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 1e-2;
    auto expectSame = [&](const torch::Tensor &got, const torch::Tensor &want,
                          const std::string &what) {
      EXPECT_TRUE(
          torch::allclose(got.to(torch::kFloat32), want.to(torch::kFloat32), tolerance, tolerance))
          << name << " " << what << ": largest difference "
          << (got.to(torch::kFloat32) - want.to(torch::kFloat32)).abs().max().item<double>();
    };
    // Decode-sized rows run on the blocks (exact weights; the widened bf16 copy would be
    // rounded), longer ones on the packed copies, as the widened weights do.
    const torch::Tensor x3 = torch::randn({3, 96}).to(dtype), y0 = torch::randn({3, 64}).to(dtype);
    expectClose(nnsc::linear(x3, {}, bias, w), x3, w, bias, {}, std::string(name) + " 3 rows");
    torch::Tensor acc3 = y0.clone();
    nnsc::linearAdd(acc3, x3, {}, w);
    expectClose(acc3, x3, w, {}, y0, std::string(name) + " 3 rows added");
    for (int64_t rows : {nnsc::quantDecodeMaxRows(dtype) + 1, int64_t(40)}) {
      const std::string what = std::to_string(rows) + " rows";
      const torch::Tensor x = torch::randn({rows, 96}).to(dtype);
      expectSame(nnsc::linear(x, {}, bias, w), nnsc::linear(x, widened, bias), what);
      torch::Tensor acc = torch::randn({rows, 64}).to(dtype), want = acc.clone();
      nnsc::linearAdd(acc, x, {}, w);
      nnsc::linearAdd(want, x, widened);
      expectSame(acc, want, what + " added");
      // Rows 40-55: across the change of format.
      expectSame(nnsc::linear(x, {}, {}, w.narrowRows(40, 16)),
                 nnsc::linear(x, widened.narrow(0, 40, 16)), what + " rows 40-55");
    }
    // The whole matrix found the copy packed at load; rows 40-55 were packed once (their
    // widened twin once too, by the widened products next to them).
    EXPECT_EQ(nnsc::oneDnnPackedWeights(), packed + 3) << name;
    const torch::Tensor x = torch::randn({40, 96}).to(dtype);
    EXPECT_EQ(errorOf([&] { nnsc::linear(x, {}, {}, QuantizedMatrix()); }),
              "linear: neither a widened weight nor blocks");
    EXPECT_EQ(errorOf([&] { nnsc::linear(x.narrow(1, 0, 64), {}, {}, w); }),
              "linear: input [40, 64] does not match the blocks [64, 96]");
  }
}

/// widen/widenRows (the tiles of a product on the blocks, ProjectionForms::BlocksOnly) give the
/// loader's dequantized values exactly, in fp32 and rounded to bf16 as Tensor::to rounds, for
/// every format (the 32-weight ones on the kernels, the K-quants through dequantize*()), for
/// row ranges inside a part and across a change of format; a range off the matrix is refused.
TEST(QuantizedMatrix, WidenRowsAreTheLoadersValues) {
  torch::manual_seed(6);
  for (QuantFormat format :
       {QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1,
        QuantFormat::Q8_0, QuantFormat::IQ4_NL, QuantFormat::Q2_K, QuantFormat::Q3_K,
        QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_XS}) {
    const char *name = nnsc::kernels::quantFormatName(format);
    const QuantizedMatrix w = QuantizedMatrix::cat(
        {randomMatrix(format, 13, 512), randomMatrix(QuantFormat::Q8_0, 6, 512)});
    const torch::Tensor want = dequantize(w);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      EXPECT_TRUE(w.widen(dtype).equal(want.to(dtype))) << name << " " << dtype;
      for (auto [begin, count] : {std::pair<int64_t, int64_t>{0, 19}, {3, 7}, {11, 5}, {13, 6}}) {
        torch::Tensor rows = torch::full({count, 512}, 7.0).to(dtype);
        w.widenRows(begin, count, dtype, rows.data_ptr());
        EXPECT_TRUE(rows.equal(want.narrow(0, begin, count).to(dtype)))
            << name << " " << dtype << " rows " << begin << "+" << count;
      }
    }
    EXPECT_EQ(errorOf([&] { w.widenRows(15, 5, torch::kFloat32, nullptr); }),
              "widenRows: rows [15, 20) of a matrix of 19");
  }
  std::vector<float> out(256);
  try {
    nnsc::kernels::widenQuantRows(QuantFormat::Q4_K, nullptr, 0, 1, 256, out.data());
    ADD_FAILURE() << "widenQuantRows took Q4_K blocks";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_STREQ(e.what(), "widenQuantRows: Q4_K blocks are not widened here");
  }
}

/// A weight of ProjectionForms::BlocksOnly (QuantizedMatrix::tiled): products over the
/// quantized path's rows multiply tiles dequantized from the blocks, with no packed copy
/// made, and give what the packed copy gives; an lm_head-sized matrix (over 16 MB widened)
/// takes several tiles.
TEST(QuantizedLinear, TiledWeightsMultiplyTilesOfTheirBlocks) {
  if (supportedIsas().empty())
    GTEST_SKIP() << NoQuantKernels;
  if (!nnsc::oneDnnServes(torch::kFloat32) && !nnsc::oneDnnServes(torch::kBFloat16))
    GTEST_SKIP() << "oneDNN serves no dtype here (no AVX-512 BW/VL/DQ, or NNSC_GEMM=libtorch): "
                    "a load keeps the widened weights then, so no product runs on tiles";
  torch::manual_seed(5);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    if (!nnsc::oneDnnServes(dtype))
      continue;
    const char *name = dtype == torch::kFloat32 ? "fp32" : "bf16";
    const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 1e-2;
    for (int64_t rows : {int64_t(64), int64_t(9000)}) {
      QuantizedMatrix w = QuantizedMatrix::cat({randomMatrix(QuantFormat::Q5_0, rows - 16, 576),
                                                randomMatrix(QuantFormat::Q8_0, 16, 576)});
      const torch::Tensor widened = w.widen(dtype);
      w.tiled = true;
      const size_t packed = nnsc::oneDnnPackedWeights();
      const torch::Tensor x = torch::randn({40, 576}).to(dtype);
      const torch::Tensor bias = torch::randn({rows}).to(dtype);
      auto expectSame = [&](const torch::Tensor &got, const torch::Tensor &want,
                            const std::string &what) {
        const torch::Tensor g = got.to(torch::kFloat32), e = want.to(torch::kFloat32);
        EXPECT_TRUE(torch::allclose(g, e, tolerance, tolerance))
            << name << " " << rows << " rows " << what << ": largest difference "
            << (g - e).abs().max().item<double>();
      };
      expectSame(nnsc::linear(x, {}, bias, w), nnsc::linear(x, widened, bias), "product");
      torch::Tensor acc = torch::randn({40, rows}).to(dtype), want = acc.clone();
      nnsc::linearAdd(acc, x, {}, w);
      nnsc::linearAdd(want, x, widened);
      expectSame(acc, want, "added");
      // Only the widened twin was packed (by the products on it).
      EXPECT_EQ(nnsc::oneDnnPackedWeights(), packed + 1) << name << " " << rows << " rows";
    }
  }
}

/// The bundled model's own blocks (q/k rows unpermuted as the loader does) against its
/// widened weights, through nnsc::linear as the decoder calls it: the quantized path up to
/// the row limit, and the same values from the widened path above it.
// fp32 and bf16 activations, every instruction set this CPU runs (the vdpbf16ps kernel on
// the bf16 single rows where the CPU has AVX512-BF16).
TEST(QuantGemvRealBlocks, BundledModelProjectionsMatchTheWidenedWeights) {
  if (supportedIsas().empty())
    GTEST_SKIP() << NoQuantKernels;
  const std::string path = NNSC_DEFAULT_MODEL;
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing: run scripts/setup";
  std::string error;
  auto file = nnsc::gguf::GGUFFile::open(path, error);
  ASSERT_TRUE(file) << error;
  auto config = nnsc::schema::ModelConfig::fromGGUF(*file, error);
  ASSERT_TRUE(config) << error;
  nnsc::GGUFWeightSource source(*file, *config);
  const int64_t h = config->hidden, q = config->heads * config->headDim,
                kv = config->kvHeads * config->headDim, inter = config->intermediate;
  const std::pair<std::string, std::vector<int64_t>> tensors[] = {
      {"model.layers.0.self_attn.q_proj.weight", {q, h}},
      {"model.layers.7.self_attn.k_proj.weight", {kv, h}},
      {"model.layers.3.mlp.down_proj.weight", {h, inter}},
      {"model.embed_tokens.weight", {config->vocab, h}},
  };
  torch::manual_seed(2);
  int checked = 0;
  for (const auto &[name, shape] : tensors) {
    const QuantizedMatrix quant = source.getQuantized(name, shape);
    if (!quant.defined())
      continue; // a format the kernels do not read
    ++checked;
    // The embedding is large: its first 4099 rows (a tail off every row block) suffice.
    const int64_t rows = std::min<int64_t>(shape[0], 4099);
    const QuantizedMatrix w = quant.narrowRows(0, rows);
    const torch::Tensor dense = source.get(name, shape, torch::kFloat32, false).narrow(0, 0, rows);
    EXPECT_TRUE(dequantize(w).equal(dense)) << name << ": blocks and widened rows differ";
    for (auto dtype : {torch::kFloat32, torch::kBFloat16})
      for (int64_t batch : {1, 2, 4, 7, 12, 13, 24}) {
        const std::string what = name + (dtype == torch::kFloat32 ? " fp32" : " bf16") +
                                 " batch=" + std::to_string(batch);
        const torch::Tensor x = torch::randn({batch, shape[1]}).to(dtype);
        const bool quantized = batch <= nnsc::quantDecodeMaxRows(dtype);
        if (quantized)
          EXPECT_TRUE(nnsc::quantizedLinearApplies(x, w)) << what;
        for (QuantIsa isa : supportedIsas())
          expectClose(runKernel(x, w, {}, torch::empty({batch, rows}, x.options()), false, isa), x,
                      w, {}, {}, what + " " + isaName(isa));
        // Above the quantized path's rows, linear takes the widened weights in the
        // activations' dtype: the dequantized weights only in fp32.
        if (quantized || dtype == torch::kFloat32)
          expectClose(nnsc::linear(x, dense.to(dtype).contiguous(), {}, w), x, w, {}, {},
                      what + " linear");
      }
  }
  EXPECT_GT(checked, 0) << "no Q4_0/Q4_1/Q8_0 projection in " << path;
}

} // namespace

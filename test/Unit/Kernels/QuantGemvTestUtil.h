//===- QuantGemvTestUtil.h - Shared helpers of the quantized GEMV tests -*- C++ -*-===//
//
// The reference (LibTorch's float64 matmul of the loader's dequantized weights), its error
// bound, random blocks of every format, and one direct kernel call per instruction set, for
// QuantGemvTest.cpp and QuantGemvKQuantTest.cpp. The bound is the worst case of an fp32 sum of
// `cols` products, gamma_cols * sum (|w| + 2 |m| + 32 |d|) |x| (m the block's minimum, -8 d for
// Q4_0: the single-row kernels sum d * q x and m * x separately, and the vdpbf16ps kernel sums
// 16 d (1 + q / 16) x and (m - 16 d) x; for the K-quants m is Q4_K's and Q5_K's sub-block
// minimum, 0 for Q6_K), plus half a bf16 ulp for a bf16 output: a wrong weight, nibble order or
// scale is far outside it.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_UNIT_KERNELS_QUANTGEMVTESTUTIL_H
#define NNSC_TEST_UNIT_KERNELS_QUANTGEMVTESTUTIL_H

#include "nnsc/Runtime/Kernels/Dequantize.h"
#include "nnsc/Runtime/Kernels/QuantGemv.h"
#include "nnsc/Runtime/Layers/QuantizedLinear.h"
#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

namespace nnsc::quant_test {

using nnsc::QuantizedMatrix;
using nnsc::kernels::QuantFormat;
using nnsc::kernels::QuantIsa;

/// perPart(part) of each single-format part of `m`, concatenated along the rows.
template <typename F> torch::Tensor catOverParts(const QuantizedMatrix &m, const F &perPart) {
  std::vector<torch::Tensor> parts;
  for (const QuantizedMatrix &part : m.parts())
    parts.push_back(perPart(part));
  return torch::cat(parts);
}

/// The loader's dequantization of `m` to fp32 [rows, cols], part by part: its ggml blocks
/// through dequantize*(), not QuantizedMatrix::widen (whose kernels the tests check).
inline torch::Tensor dequantize(const QuantizedMatrix &m) {
  return catOverParts(m, [](const QuantizedMatrix &part) {
    const torch::Tensor ggml = part.ggmlBlocks();
    torch::Tensor out = torch::empty({part.rows(), part.cols}, torch::kFloat32);
    nnsc::kernels::dequantize(part.format, ggml.data_ptr<uint8_t>(), out.data_ptr<float>(),
                              out.numel());
    return out;
  });
}

/// |m| of each weight's block [rows, cols]: the Q4_1/Q5_1 minimum, 8 |d| for Q4_0, 16 |d| for
/// Q5_0, 0 for Q8_0, IQ4_NL, Q3_K, Q6_K and IQ4_XS, Q2_K's, Q4_K's and Q5_K's sub-block minimum;
/// with `scales`, |d| instead for the formats the vdpbf16ps kernel offsets as 1 + q / K (Q4_0,
/// Q4_1; 2 |d| for Q5_0 and Q5_1, whose K is 32; Q4_K's sub-block scale |d sc|, Q5_K's twice
/// it; Q6_K's 11 |d sc|, its form 256 s (0.5 + q / 256) - 160 s), 0 for the others (IQ4_NL and
/// IQ4_XS meet it as their exact values).
inline torch::Tensor minimumMagnitudes(const QuantizedMatrix &m, bool scales = false) {
  if (!m.rest.empty())
    return catOverParts(
        m, [scales](const QuantizedMatrix &part) { return minimumMagnitudes(part, scales); });
  torch::Tensor out = torch::zeros({m.rows(), m.cols}, torch::kFloat64);
  const bool q5 = m.format == QuantFormat::Q5_0 || m.format == QuantFormat::Q5_1;
  const bool q5K = m.format == QuantFormat::Q5_K;
  const bool subBlockScales = m.format == QuantFormat::Q4_K || m.format == QuantFormat::Q5_K;
  const bool bf16DotFormat = m.format == QuantFormat::Q4_0 || m.format == QuantFormat::Q4_1 || q5 ||
                             subBlockScales || m.format == QuantFormat::Q6_K;
  if (m.format == QuantFormat::Q8_0 || m.format == QuantFormat::IQ4_NL ||
      m.format == QuantFormat::Q3_K || (m.format == QuantFormat::Q6_K && !scales) ||
      m.format == QuantFormat::IQ4_XS || (scales && !bf16DotFormat))
    return out;
  const int64_t bytes = nnsc::kernels::quantBlockBytes(m.format);
  const torch::Tensor blocks = m.ggmlBlocks();
  double *o = out.data_ptr<double>();
  if (m.format == QuantFormat::Q6_K) { // 256 |s| (0.5 + q / 256) + 160 |s| <= 11 * 32 |s|
    int8_t q[256];
    float sc[16];
    for (int64_t r = 0; r < m.rows(); ++r)
      for (int64_t k = 0; k < m.cols / 256; ++k) {
        nnsc::kernels::unpackQ6_K(blocks.data_ptr<uint8_t>() + r * blocks.stride(0) + k * bytes, q,
                                  sc);
        for (int j = 0; j < 16; ++j)
          std::fill(o + r * m.cols + k * 256 + 16 * j, o + r * m.cols + k * 256 + 16 * j + 16,
                    11 * std::abs(double(sc[j])));
      }
    return out;
  }
  if (subBlockScales) {
    int8_t q[256];
    float sc[8], mn[8];
    for (int64_t r = 0; r < m.rows(); ++r)
      for (int64_t k = 0; k < m.cols / 256; ++k) {
        (m.format == QuantFormat::Q4_K ? nnsc::kernels::unpackQ4_K : nnsc::kernels::unpackQ5_K)(
            blocks.data_ptr<uint8_t>() + r * blocks.stride(0) + k * bytes, q, sc, mn);
        for (int j = 0; j < 8; ++j)
          std::fill(o + r * m.cols + k * 256 + 32 * j, o + r * m.cols + k * 256 + 32 * j + 32,
                    scales ? std::abs(double(sc[j])) * (q5K ? 2 : 1) : std::abs(double(mn[j])));
      }
    return out;
  }
  if (m.format == QuantFormat::Q2_K) {
    int8_t q[256];
    float sc[16], mn[16];
    for (int64_t r = 0; r < m.rows(); ++r)
      for (int64_t k = 0; k < m.cols / 256; ++k) {
        nnsc::kernels::unpackQ2_K(blocks.data_ptr<uint8_t>() + r * blocks.stride(0) + k * bytes, q,
                                  sc, mn);
        for (int j = 0; j < 16; ++j)
          std::fill(o + r * m.cols + k * 256 + 16 * j, o + r * m.cols + k * 256 + 16 * j + 16,
                    std::abs(double(mn[j])));
      }
    return out;
  }
  for (int64_t r = 0; r < m.rows(); ++r)
    for (int64_t k = 0; k < m.cols / 32; ++k) {
      const uint8_t *p = blocks.data_ptr<uint8_t>() + r * blocks.stride(0) + k * bytes;
      uint16_t h;
      const bool hasMinimum = nnsc::kernels::quantHasMinimum(m.format);
      std::memcpy(&h, hasMinimum && !scales ? p + 2 : p, 2);
      const double offset = m.format == QuantFormat::Q4_0   ? 8
                            : m.format == QuantFormat::Q5_0 ? 16
                                                            : 1;
      const double v = std::abs(double(nnsc::kernels::halfToFloat(h))) * (scales ? (q5 ? 2 : 1)
                                                                          : hasMinimum ? 1
                                                                                       : offset);
      std::fill(o + r * m.cols + k * 32, o + r * m.cols + k * 32 + 32, v);
    }
  return out;
}

/// An fp16 bit pattern in [2^e, 2^(e + 1)), negative with `negative`.
inline uint16_t randomHalf(int e, bool negative = false) {
  return uint16_t((negative ? 0x8000 : 0) + ((e + 15) << 10) +
                  torch::randint(0, 0x400, {1}).item<int>());
}

/// Random blocks: quants (and the K-quants' packed sub-block scales) uniform over all bytes,
/// scales fp16 in [2^-8, 2^-7) and minimums in (-2^-7, -2^-8], roughly the range of a real
/// model's; for the K-quants d in [2^-13, 2^-12) and dmin in [2^-12, 2^-11), which the 6-bit
/// sub-block scales and minimums multiply.
inline QuantizedMatrix randomMatrix(QuantFormat format, int64_t rows, int64_t cols) {
  const int64_t bytes = nnsc::kernels::quantBlockBytes(format);
  const int64_t weights = nnsc::kernels::quantBlockWeights(format);
  const bool kQuant = nnsc::kernels::isKQuant(format);
  torch::Tensor blocks = torch::randint(0, 256, {rows, cols / weights * bytes}, torch::kUInt8);
  uint8_t *p = blocks.data_ptr<uint8_t>();
  for (int64_t b = 0; b < rows * cols / weights; ++b, p += bytes) {
    // Where d lies: first, or last in Q3_K and Q6_K; Q2_K's d and dmin close its block.
    const int64_t dAt = format == QuantFormat::Q6_K   ? 208
                        : format == QuantFormat::Q3_K ? 108
                        : format == QuantFormat::Q2_K ? 80
                                                      : 0;
    const uint16_t d = randomHalf(kQuant ? -13 : -8);
    std::memcpy(p + dAt, &d, 2);
    if (nnsc::kernels::quantHasMinimum(format) || format == QuantFormat::Q2_K ||
        format == QuantFormat::Q4_K || format == QuantFormat::Q5_K) {
      const uint16_t m = kQuant ? randomHalf(-12) : randomHalf(-8, /*negative=*/true);
      std::memcpy(p + dAt + 2, &m, 2);
    }
  }
  return QuantizedMatrix::fromGgmlBlocks(format, blocks, cols);
}

/// Checks y (batch x rows, dtype of x) against x @ dequantize(w)^T (+ bias) (+ y0) in double.
inline void expectClose(const torch::Tensor &got, const torch::Tensor &x, const QuantizedMatrix &w,
                        const torch::Tensor &bias, const torch::Tensor &y0,
                        const std::string &what) {
  const torch::Tensor wd = dequantize(w).to(torch::kFloat64);
  const torch::Tensor xd = x.to(torch::kFloat64);
  torch::Tensor want = at::matmul(xd, wd.t());
  torch::Tensor scale = at::matmul(
      xd.abs(), (wd.abs() + 2 * minimumMagnitudes(w) + 32 * minimumMagnitudes(w, true)).t());
  if (bias.defined()) {
    want = want + bias.to(torch::kFloat64);
    scale = scale + bias.to(torch::kFloat64).abs();
  }
  if (y0.defined()) {
    want = want + y0.to(torch::kFloat64);
    scale = scale + y0.to(torch::kFloat64).abs();
  }
  const double n = double(w.cols + 2);
  const double gamma = n * std::ldexp(1.0, -24) / (1 - n * std::ldexp(1.0, -24));
  torch::Tensor bound = scale * gamma + 1e-30;
  if (got.scalar_type() == torch::kBFloat16)
    bound = bound + want.abs() * std::ldexp(1.0, -8) + scale * std::ldexp(1.0, -8) * gamma;
  const torch::Tensor excess = (got.to(torch::kFloat64) - want).abs() - bound;
  EXPECT_LE(excess.max().item<double>(), 0.0) << what;
}

inline std::vector<QuantIsa> supportedIsas() {
  std::vector<QuantIsa> isas;
  for (QuantIsa isa : {QuantIsa::Avx2, QuantIsa::Avx512, QuantIsa::Avx512Bf16})
    if (nnsc::kernels::quantIsaSupported(isa))
      isas.push_back(isa);
  return isas;
}

/// Why a kernel test skips where supportedIsas() is empty. The kernels' baseline is x86-64-v3
/// (AVX2, FMA, F16C); on an older CPU the engine never calls them (quantizedLinearApplies is
/// false, the widened weights serve every product), so there is nothing of theirs to test.
constexpr const char *NoQuantKernels =
    "this CPU lacks AVX2/FMA/F16C, the quantized kernels' baseline: the engine keeps every "
    "product on the widened weights here";

/// The parameterized kernel tests of one (format, activation dtype).
class QuantKernelTest
    : public ::testing::TestWithParam<std::tuple<QuantFormat, torch::ScalarType>> {
protected:
  void SetUp() override {
    if (supportedIsas().empty())
      GTEST_SKIP() << NoQuantKernels;
    torch::manual_seed(0);
  }
};

/// "Q4_1_fp32" for the (format, dtype) parameter.
inline std::string formatAndDtypeName(
    const ::testing::TestParamInfo<std::tuple<QuantFormat, torch::ScalarType>> &info) {
  return std::string(nnsc::kernels::quantFormatName(std::get<0>(info.param))) +
         (std::get<1>(info.param) == torch::kFloat32 ? "_fp32" : "_bf16");
}

inline const char *isaName(QuantIsa isa) {
  switch (isa) {
  case QuantIsa::Avx2:
    return "avx2";
  case QuantIsa::Avx512:
    return "avx512";
  case QuantIsa::Avx512Bf16:
    return "avx512bf16";
  }
  return "?";
}

/// Runs one kernel call directly (no threads), with `isa`.
inline torch::Tensor runKernel(const torch::Tensor &x, const QuantizedMatrix &w,
                               const torch::Tensor &bias, torch::Tensor y, bool accumulate,
                               QuantIsa isa) {
  auto fill = [&](auto &a, auto *type) {
    using T = std::remove_pointer_t<decltype(type)>;
    a.format = w.format;
    a.w = w.blocks.data_ptr<uint8_t>();
    a.rowBytes = w.blocks.stride(0);
    a.x = static_cast<const T *>(x.data_ptr());
    a.y = static_cast<T *>(y.data_ptr());
    a.bias = bias.defined() ? static_cast<const T *>(bias.data_ptr()) : nullptr;
    a.rows = w.rows();
    a.cols = w.cols;
    a.batch = x.size(0);
    a.xStride = x.stride(0);
    a.yStride = y.stride(0);
    a.accumulate = accumulate;
  };
  if (x.scalar_type() == torch::kBFloat16) {
    nnsc::kernels::QuantGemvArgs<uint16_t> a;
    fill(a, static_cast<uint16_t *>(nullptr));
    nnsc::kernels::quantGemv(a, 0, a.rows, isa);
  } else {
    nnsc::kernels::QuantGemvArgs<float> a;
    fill(a, static_cast<float *>(nullptr));
    nnsc::kernels::quantGemv(a, 0, a.rows, isa);
  }
  return y;
}

/// Every kernel this CPU runs on random `format` blocks of each width in `widths`: row counts
/// off the 2- and 4-row blocks, batches off the 4- and 8-row activation tiles, with and
/// without bias.
inline void expectKernelsMatchOverShapes(QuantFormat format, torch::ScalarType dtype,
                                         std::initializer_list<int64_t> widths) {
  for (QuantIsa isa : supportedIsas())
    for (int64_t rows : {1, 3, 5, 6, 17})
      for (int64_t cols : widths)
        for (int64_t batch : {1, 2, 3, 4, 5, 7, 8, 9, 13, 15}) {
          const QuantizedMatrix w = randomMatrix(format, rows, cols);
          const torch::Tensor x = torch::randn({batch, cols}).to(dtype);
          const torch::Tensor bias = torch::randn({rows}).to(dtype);
          for (bool withBias : {false, true}) {
            const torch::Tensor b = withBias ? bias : torch::Tensor();
            torch::Tensor y = runKernel(x, w, b, torch::empty({batch, rows}, dtype), false, isa);
            expectClose(y, x, w, b, {},
                        std::string(isaName(isa)) + " rows=" + std::to_string(rows) +
                            " cols=" + std::to_string(cols) + " batch=" + std::to_string(batch) +
                            " bias=" + std::to_string(withBias));
          }
        }
}

/// Every kernel this CPU runs accumulating 37 outputs into a column slice of a wider buffer
/// (rows 50 elements apart) from strided activations of `cols` columns: the slice gets the
/// sums, the columns around it stay untouched.
inline void expectAccumulatesIntoStridedRows(QuantFormat format, torch::ScalarType dtype,
                                             int64_t cols) {
  for (QuantIsa isa : supportedIsas())
    for (int64_t batch : {1, 3, 6}) {
      const QuantizedMatrix w = randomMatrix(format, 37, cols);
      const torch::Tensor x = torch::randn({batch, cols + 88}).to(dtype).narrow(1, 40, cols);
      torch::Tensor buffer = torch::randn({batch, 50}).to(dtype);
      const torch::Tensor original = buffer.clone();
      torch::Tensor acc = buffer.narrow(1, 5, 37);
      runKernel(x, w, {}, acc, /*accumulate=*/true, isa);
      expectClose(acc, x, w, {}, original.narrow(1, 5, 37),
                  std::string(isaName(isa)) + " accumulate batch=" + std::to_string(batch));
      EXPECT_TRUE(buffer.narrow(1, 0, 5).equal(original.narrow(1, 0, 5)));
      EXPECT_TRUE(buffer.narrow(1, 42, 8).equal(original.narrow(1, 42, 8)));
    }
}

} // namespace nnsc::quant_test

#endif // NNSC_TEST_UNIT_KERNELS_QUANTGEMVTESTUTIL_H

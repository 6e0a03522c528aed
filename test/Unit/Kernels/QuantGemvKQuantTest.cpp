//===- QuantGemvKQuantTest.cpp - K-quant blocks and their GEMV ---*- C++ -*-===//
//
// The K-quants' unpacking against super-blocks packed here as ggml's quantize_row_q4_K /
// quantize_row_q5_K / quantize_row_q6_K pack them (every 6-bit scale and minimum, every quant
// bit; Q2_K's and Q3_K's in DequantizeTest.cpp), and the GEMV kernels of Q2_K to Q6_K (each
// instruction set this CPU runs, fp32 and bf16 activations) against LibTorch's float64 matmul
// of the dequantized weights (QuantGemvTestUtil.h). End to end, against transformers
// dequantizing a real file with gguf-py: test/Runtime/Models/smollm2-requantized-logits.test
// and smollm2-low-bit-logits.test.
//
//===----------------------------------------------------------------------===//

#include "QuantGemvTestUtil.h"

#include "nnsc/Runtime/Layers/Linear.h"

#include <array>
#include <random>

namespace {

using namespace nnsc::quant_test;

void putHalf(uint8_t *p, float v) {
  const uint16_t h = c10::Half(v).x;
  std::memcpy(p, &h, 2);
}

TEST(KQuantBlocks, Q4_KUnpacksEverySixBitScaleMinimumAndNibble) {
  std::mt19937 rng(1);
  std::array<uint8_t, 144> block{};
  putHalf(block.data(), 0.5f);
  putHalf(block.data() + 2, 0.25f);
  // 6-bit values using their top bits, packed as quantize_row_q4_K does.
  const int sc[8] = {3, 10, 17, 24, 33, 40, 47, 63}, mn[8] = {5, 12, 19, 26, 35, 42, 49, 62};
  uint8_t *scales = block.data() + 4;
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = uint8_t(sc[j]);
      scales[j + 4] = uint8_t(mn[j]);
    } else {
      scales[j + 4] = uint8_t((sc[j] & 0xF) | ((mn[j] & 0xF) << 4));
      scales[j - 4] |= uint8_t((sc[j] >> 4) << 6);
      scales[j] |= uint8_t((mn[j] >> 4) << 6);
    }
  }
  int want[256];
  for (int &q : want)
    q = int(rng() % 16);
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l)
      block[size_t(16 + 32 * g + l)] = uint8_t(want[64 * g + l] | (want[64 * g + 32 + l] << 4));
  int8_t q[256];
  float gotScales[8], gotMinimums[8];
  nnsc::kernels::unpackQ4_K(block.data(), q, gotScales, gotMinimums);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(gotScales[j], 0.5f * float(sc[j])) << "sub-block " << j;
    EXPECT_EQ(gotMinimums[j], 0.25f * float(mn[j])) << "sub-block " << j;
  }
  float x[256];
  nnsc::kernels::dequantizeQ4_K(block.data(), x, 256);
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(q[i], want[i]) << "weight " << i;
    ASSERT_EQ(x[i], 0.5f * float(sc[i / 32]) * float(want[i]) - 0.25f * float(mn[i / 32]));
  }
}

// Q5_K: Q4_K's header (checked above, same decoder), then the fifth bits: qh[l] holds bit j of
// weight l of sub-block j, written here as quantize_row_q5_K packs them.
TEST(KQuantBlocks, Q5_KTakesEachFifthBitFromItsSubBlocksBitOfQh) {
  std::mt19937 rng(2);
  std::array<uint8_t, 176> block{};
  putHalf(block.data(), 0.5f);
  putHalf(block.data() + 2, 0.25f);
  const int sc = 37, mn = 21; // every sub-block; the 6-bit packing's top bits as in Q4_K
  for (int j = 0; j < 4; ++j) {
    block[size_t(4 + j)] = uint8_t((sc & 63) | ((sc >> 4) << 6));
    block[size_t(8 + j)] = uint8_t((mn & 63) | ((mn >> 4) << 6));
    block[size_t(12 + j)] = uint8_t((sc & 0xF) | ((mn & 0xF) << 4));
  }
  int want[256];
  for (int &q : want)
    q = int(rng() % 32);
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l) {
      const int lo = want[64 * g + l], hi = want[64 * g + 32 + l];
      block[size_t(48 + 32 * g + l)] = uint8_t((lo & 15) | ((hi & 15) << 4));
      block[size_t(16 + l)] |= uint8_t(((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
    }
  int8_t q[256];
  float scales[8], minimums[8];
  nnsc::kernels::unpackQ5_K(block.data(), q, scales, minimums);
  float x[256];
  nnsc::kernels::dequantizeQ5_K(block.data(), x, 256);
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(q[i], want[i]) << "weight " << i;
    ASSERT_EQ(x[i], 0.5f * float(sc) * float(want[i]) - 0.25f * float(mn)) << "weight " << i;
  }
}

TEST(KQuantBlocks, Q6_KUnpacksEverySixBitQuantAndSignedScale) {
  std::mt19937 rng(2);
  std::array<uint8_t, 210> block{};
  int want[256];
  for (int &q : want)
    q = int(rng() % 64);
  // quantize_row_q6_K's packing, 128 weights at a time.
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const int *L = want + 128 * h;
      block[size_t(64 * h + l)] = uint8_t((L[l] & 0xF) | ((L[l + 64] & 0xF) << 4));
      block[size_t(64 * h + l + 32)] = uint8_t((L[l + 32] & 0xF) | ((L[l + 96] & 0xF) << 4));
      block[size_t(128 + 32 * h + l)] = uint8_t((L[l] >> 4) | ((L[l + 32] >> 4) << 2) |
                                                ((L[l + 64] >> 4) << 4) | ((L[l + 96] >> 4) << 6));
    }
  for (int k = 0; k < 16; ++k)
    block[size_t(192 + k)] = uint8_t(int8_t(k % 2 ? -(k + 100) : k * 7 + 1));
  putHalf(block.data() + 208, 0.125f);
  int8_t q[256];
  float scales[16];
  nnsc::kernels::unpackQ6_K(block.data(), q, scales);
  float x[256];
  nnsc::kernels::dequantizeQ6_K(block.data(), x, 256);
  for (int k = 0; k < 16; ++k)
    EXPECT_EQ(scales[k], 0.125f * float(k % 2 ? -(k + 100) : k * 7 + 1)) << "scale " << k;
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(q[i], want[i] - 32) << "weight " << i;
    ASSERT_EQ(x[i], scales[i / 16] * float(want[i] - 32)) << "weight " << i;
  }
}

class KQuantGemv : public QuantKernelTest {};

TEST_P(KQuantGemv, MatchesDequantizedMatmulOverShapes) {
  const auto [format, dtype] = GetParam();
  // One to six super-blocks.
  expectKernelsMatchOverShapes(format, dtype, {256, 768, 1536});
}

TEST_P(KQuantGemv, AccumulatesIntoStridedRowsThroughLinear) {
  const auto [format, dtype] = GetParam();
  expectAccumulatesIntoStridedRows(format, dtype, 512);
  // Through nnsc::linear as the decoder calls it: the quantized path on the thread pool.
  const QuantizedMatrix w = randomMatrix(format, 70, 768);
  const torch::Tensor dense = dequantize(w);
  const torch::Tensor x = torch::randn({2, 768}).to(dtype);
  ASSERT_TRUE(nnsc::quantizedLinearApplies(x, w));
  expectClose(nnsc::linear(x, dense.to(dtype).contiguous(), {}, w), x, w, {}, {}, "linear");
}

INSTANTIATE_TEST_SUITE_P(
    Formats, KQuantGemv,
    ::testing::Combine(::testing::Values(QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K,
                                         QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_XS),
                       ::testing::Values(torch::kFloat32, torch::kBFloat16)),
    formatAndDtypeName);

TEST(KQuantMatrix, RowsAreStoredAsTheFileHasThemAndSliceOnSuperBlocks) {
  torch::manual_seed(3);
  for (QuantFormat format : {QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K,
                             QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_XS}) {
    const QuantizedMatrix r = randomMatrix(format, 4, 768);
    EXPECT_TRUE(r.ggmlBlocks().equal(r.blocks)) << nnsc::kernels::quantFormatName(format);
    EXPECT_TRUE(dequantize(r.narrowCols(256, 512)).equal(dequantize(r).narrow(1, 256, 512)));
    EXPECT_FALSE(r.narrowCols(32, 256).defined()) << "not on a super-block";
  }
  nnsc::kernels::QuantGemvArgs<float> a;
  a.format = QuantFormat::Q4_K;
  a.cols = 288; // whole 32-weight blocks, not whole super-blocks
  a.rows = 1;
  a.batch = 1;
  try {
    nnsc::kernels::quantGemv(a, 0, 1);
    FAIL() << "no error";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 256 for Q4_K"), std::string::npos)
        << e.what();
  }
}

} // namespace

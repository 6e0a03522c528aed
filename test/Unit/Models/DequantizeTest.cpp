//===- DequantizeTest.cpp - ggml block decoders -----------------*- C++ -*-===//

#include "nnsc/Runtime/Kernels/Dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace nnsc::kernels;

namespace {

/// fp16 bit patterns of small exact values: sign, 5-bit exponent (bias 15), 10-bit mantissa.
uint16_t half(int sign, int exponent, int mantissa) {
  return uint16_t((sign << 15) | (exponent << 10) | mantissa);
}

void put16(std::vector<uint8_t> &out, uint16_t v) {
  out.push_back(uint8_t(v & 0xff));
  out.push_back(uint8_t(v >> 8));
}

TEST(Dequantize, HalfToFloatCoversNormalSubnormalAndSpecial) {
  EXPECT_EQ(halfToFloat(half(0, 15, 0)), 1.0f);
  EXPECT_EQ(halfToFloat(half(1, 16, 512)), -3.0f);
  EXPECT_EQ(halfToFloat(half(0, 0, 1)), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(half(0, 0, 0x3ff)), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(halfToFloat(half(0, 31, 0))));
  EXPECT_TRUE(std::isnan(halfToFloat(half(0, 31, 1))));
  EXPECT_TRUE(std::signbit(halfToFloat(half(1, 0, 0))));
}

TEST(Dequantize, BF16IsTheHighHalfOfFloat) {
  float f = -2.75f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  EXPECT_EQ(bf16ToFloat(uint16_t(bits >> 16)), f);
}

TEST(Dequantize, Q8_0ScalesSignedQuants) {
  std::vector<uint8_t> block;
  put16(block, half(0, 14, 0)); // d = 0.5
  for (int j = 0; j < 32; ++j)
    block.push_back(uint8_t(int8_t(j - 16)));
  std::vector<float> out(32);
  dequantizeQ8_0(block.data(), out.data(), 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(out[j], 0.5f * float(j - 16)) << j;
}

TEST(Dequantize, Q4_0LowNibblesFirstHalfHighNibblesSecond) {
  std::vector<uint8_t> block;
  put16(block, half(0, 16, 0)); // d = 2
  for (int j = 0; j < 16; ++j)
    block.push_back(uint8_t((j & 15) | ((15 - j) << 4)));
  std::vector<float> out(32);
  dequantizeQ4_0(block.data(), out.data(), 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 2.0f * float(j - 8)) << j;
    EXPECT_EQ(out[j + 16], 2.0f * float(15 - j - 8)) << j;
  }
}

TEST(Dequantize, Q4_1AddsTheMinimumPerBlock) {
  std::vector<uint8_t> blocks;
  for (int b = 0; b < 2; ++b) {
    put16(blocks, half(0, 13, 0));     // d = 0.25
    put16(blocks, half(1, 15 + b, 0)); // m = -1, then -2
    for (int j = 0; j < 16; ++j)
      blocks.push_back(uint8_t(j | (j << 4)));
  }
  std::vector<float> out(64);
  dequantizeQ4_1(blocks.data(), out.data(), 64);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 16; ++j) {
      float m = b == 0 ? -1.0f : -2.0f;
      EXPECT_EQ(out[b * 32 + j], 0.25f * float(j) + m);
      EXPECT_EQ(out[b * 32 + j + 16], 0.25f * float(j) + m);
    }
}

} // namespace

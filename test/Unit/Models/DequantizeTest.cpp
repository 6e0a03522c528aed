//===- DequantizeTest.cpp - ggml block decoders -----------------*- C++ -*-===//

#include "nnsc/Runtime/Kernels/Dequantize.h"

#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
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

/// A Q5_0/Q5_1 block's fifth bits: bit j of qh is quant j's (j < 16 from the low nibbles,
/// j >= 16 from the high ones). Here quant j is j: low nibble j & 15 of byte j, high nibble
/// (j + 16) & 15 = j of byte j, fifth bit set exactly for j >= 16.
std::vector<uint8_t> q5CountingQuants() {
  std::vector<uint8_t> out;
  const uint32_t qh = 0xffff0000u;
  for (int i = 0; i < 4; ++i)
    out.push_back(uint8_t(qh >> (8 * i)));
  for (int j = 0; j < 16; ++j)
    out.push_back(uint8_t(j | (j << 4)));
  return out;
}

TEST(Dequantize, Q5_0TakesTheFifthBitFromQhAndCentersOn16) {
  std::vector<uint8_t> block;
  put16(block, half(0, 14, 0)); // d = 0.5
  const std::vector<uint8_t> quants = q5CountingQuants();
  block.insert(block.end(), quants.begin(), quants.end());
  ASSERT_EQ(block.size(), 22u);
  std::vector<float> out(32);
  dequantizeQ5_0(block.data(), out.data(), 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(out[j], 0.5f * float(j - 16)) << j;
  // One fifth bit alone moves one weight by 16 d: bit 3 is quant 3's, bit 19 quant 19's.
  for (int bit : {3, 19}) {
    std::vector<uint8_t> flipped = block;
    flipped[2 + bit / 8] ^= uint8_t(1u << (bit % 8));
    std::vector<float> moved(32);
    dequantizeQ5_0(flipped.data(), moved.data(), 32);
    for (int j = 0; j < 32; ++j)
      EXPECT_EQ(moved[j] - out[j], j == bit ? (bit < 16 ? 8.0f : -8.0f) : 0.0f) << bit << " " << j;
  }
}

TEST(Dequantize, Q5_1AddsTheMinimumPerBlock) {
  std::vector<uint8_t> blocks;
  for (int b = 0; b < 2; ++b) {
    put16(blocks, half(0, 13, 0));     // d = 0.25
    put16(blocks, half(1, 15 + b, 0)); // m = -1, then -2
    const std::vector<uint8_t> quants = q5CountingQuants();
    blocks.insert(blocks.end(), quants.begin(), quants.end());
  }
  ASSERT_EQ(blocks.size(), 48u);
  std::vector<float> out(64);
  dequantizeQ5_1(blocks.data(), out.data(), 64);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 32; ++j)
      EXPECT_EQ(out[b * 32 + j], 0.25f * float(j) + (b == 0 ? -1.0f : -2.0f)) << b << " " << j;
}

// Q2_K and Q3_K (unpackQ2_K / unpackQ3_K through their decoders; the GEMV kernels unpack
// them the same way) against super-blocks packed as ggml's quantize_row_q2_K /
// quantize_row_q3_K pack them: every quant bit, scale and minimum nibble, every bit of Q3_K's
// 6-bit scales and third-bit mask. End to end, against transformers dequantizing a file with
// gguf-py: test/Runtime/Models/smollm2-low-bit-logits.test.

void putHalf(uint8_t *p, float v) {
  const uint16_t h = c10::Half(v).x;
  std::memcpy(p, &h, 2);
}

/// Weight i's position in the 2-bit planes of Q2_K and Q3_K: byte 32 h + 16 s + l, bits 2j.
struct Plane {
  int byte, shift;
};
Plane planeOf(int i) {
  const int h = i / 128, j = i / 32 % 4, s = i / 16 % 2, l = i % 16;
  return {32 * h + 16 * s + l, 2 * j};
}

TEST(Dequantize, Q2_KReadsEveryQuantScaleAndMinimum) {
  std::mt19937 rng(4);
  std::array<uint8_t, 84> block{};
  int want[256], sc[16], mn[16];
  for (int &q : want)
    q = int(rng() % 4);
  for (int k = 0; k < 16; ++k) {
    sc[k] = (k * 7 + 3) % 16; // every nibble value
    mn[k] = 15 - k;
    block[size_t(k)] = uint8_t(sc[k] | mn[k] << 4);
  }
  for (int i = 0; i < 256; ++i) {
    const Plane p = planeOf(i);
    block[size_t(16 + p.byte)] |= uint8_t(want[i] << p.shift);
  }
  putHalf(block.data() + 80, 0.5f);
  putHalf(block.data() + 82, 0.125f);
  float x[256];
  dequantizeQ2_K(block.data(), x, 256);
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(x[i], 0.5f * float(sc[i / 16]) * float(want[i]) - 0.125f * float(mn[i / 16]))
        << "weight " << i;
}

TEST(Dequantize, Q3_KReadsEveryQuantBitAndSixBitScale) {
  std::mt19937 rng(5);
  std::array<uint8_t, 110> block{};
  int want[256], sc[16];
  for (int &q : want)
    q = int(rng() % 8); // the low 2 bits and the third
  for (int k = 0; k < 16; ++k)
    sc[k] = (k * 23 + 5) % 64; // low nibbles and top bits of every value
  for (int i = 0; i < 256; ++i) {
    const Plane p = planeOf(i);
    block[size_t(32 + p.byte)] |= uint8_t((want[i] & 3) << p.shift);
    const int h = i / 128, j = i / 32 % 4, s = i / 16 % 2, l = i % 16;
    block[size_t(16 * s + l)] |= uint8_t((want[i] >> 2) << (4 * h + j));
  }
  // quantize_row_q3_K's packing of the 6-bit scales into 12 bytes.
  uint8_t *scales = block.data() + 96;
  for (int k = 0; k < 16; ++k) {
    scales[k % 8] |= uint8_t((sc[k] & 15) << (k < 8 ? 0 : 4));
    scales[8 + k % 4] |= uint8_t((sc[k] >> 4) << (2 * (k / 4)));
  }
  putHalf(block.data() + 108, 0.25f);
  float x[256];
  dequantizeQ3_K(block.data(), x, 256);
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(x[i], 0.25f * float(sc[i / 16] - 32) * float(want[i] - 4)) << "weight " << i;
}

/// ggml's kvalues_iq4nl (ggml-common.h), written out here so that a typo in kIQ4NLValues fails.
constexpr int kGgmlIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};

TEST(Dequantize, IQ4_NLLooksUpBothNibblesInTheCodebook) {
  std::vector<uint8_t> blocks;
  for (int b = 0; b < 2; ++b) {
    put16(blocks, half(b, 14, 0)); // d = 0.5, then -0.5
    for (int j = 0; j < 16; ++j)
      blocks.push_back(uint8_t(((j + b) & 15) | ((15 - j) << 4)));
  }
  std::vector<float> out(64);
  dequantizeIQ4_NL(blocks.data(), out.data(), 64);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 16; ++j) {
      const float d = b == 0 ? 0.5f : -0.5f;
      EXPECT_EQ(out[32 * b + j], d * float(kGgmlIQ4NL[(j + b) & 15])) << b << " " << j;
      EXPECT_EQ(out[32 * b + j + 16], d * float(kGgmlIQ4NL[15 - j])) << b << " " << j;
    }
}

TEST(Dequantize, IQ4_XSReadsEverySixBitScaleAndNibble) {
  std::mt19937 rng(7);
  std::array<uint8_t, 136> block{};
  int want[256], ls[8];
  for (int &q : want)
    q = int(rng() % 16);
  for (int j = 0; j < 8; ++j)
    ls[j] = (j * 23 + 5) % 64; // low nibbles and top bits of every value
  putHalf(block.data(), 0.25f);
  // quantize_row_iq4_xs's packing: scales_h (2 bits a sub-block), scales_l (a nibble each).
  uint16_t high = 0;
  for (int j = 0; j < 8; ++j) {
    high |= uint16_t((ls[j] >> 4) << (2 * j));
    block[size_t(4 + j / 2)] |= uint8_t((ls[j] & 15) << (4 * (j % 2)));
  }
  std::memcpy(block.data() + 2, &high, 2);
  for (int i = 0; i < 256; ++i) {
    const int j = i / 32, l = i % 32;
    block[size_t(8 + 16 * j + l % 16)] |= uint8_t(want[i] << (l < 16 ? 0 : 4));
  }
  float x[256];
  dequantizeIQ4_XS(block.data(), x, 256);
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(x[i], 0.25f * float(ls[i / 32] - 32) * float(kGgmlIQ4NL[want[i]])) << "weight " << i;
}

} // namespace

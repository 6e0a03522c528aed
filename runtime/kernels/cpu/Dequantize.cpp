//===- Dequantize.cpp - ggml block formats to fp32 --------------*- C++ -*-===//

#include "nnsc/Runtime/Kernels/Dequantize.h"

#include "Bf16.h"

#include <cassert>
#include <cstring>

namespace nnsc::kernels {

static uint16_t load16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: renormalize the mantissa into an fp32 normal number.
    exp = 113;
    while (!(mant & 0x400)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float bf16ToFloat(uint16_t h) { return bf16::widen(h); }

void dequantizeF16(const uint8_t *src, float *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = halfToFloat(load16(src + 2 * i));
}

void dequantizeBF16(const uint8_t *src, float *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = bf16ToFloat(load16(src + 2 * i));
}

void dequantizeQ8_0(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "Q8_0 needs whole blocks");
  for (int64_t b = 0; b < count / kQuantBlock; ++b, src += 34, out += kQuantBlock) {
    const float d = halfToFloat(load16(src));
    const auto *q = reinterpret_cast<const int8_t *>(src + 2);
    for (int j = 0; j < kQuantBlock; ++j)
      out[j] = d * float(q[j]);
  }
}

void dequantizeQ4_0(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "Q4_0 needs whole blocks");
  for (int64_t b = 0; b < count / kQuantBlock; ++b, src += 18, out += kQuantBlock) {
    const float d = halfToFloat(load16(src));
    const uint8_t *qs = src + 2;
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      out[j] = d * float(int(qs[j] & 0x0f) - 8);
      out[j + kQuantBlock / 2] = d * float(int(qs[j] >> 4) - 8);
    }
  }
}

void dequantizeQ4_1(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "Q4_1 needs whole blocks");
  for (int64_t b = 0; b < count / kQuantBlock; ++b, src += 20, out += kQuantBlock) {
    const float d = halfToFloat(load16(src));
    const float m = halfToFloat(load16(src + 2));
    const uint8_t *qs = src + 4;
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      out[j] = d * float(qs[j] & 0x0f) + m;
      out[j + kQuantBlock / 2] = d * float(qs[j] >> 4) + m;
    }
  }
}

/// The 32 5-bit quants of a Q5_0/Q5_1 block from its fifth bits `qh` (at qs - 4) and nibbles.
static void q5Quants(const uint8_t *qhThenQs, int (&q)[kQuantBlock]) {
  uint32_t qh;
  std::memcpy(&qh, qhThenQs, sizeof qh);
  const uint8_t *qs = qhThenQs + sizeof qh;
  for (int j = 0; j < kQuantBlock / 2; ++j) {
    q[j] = (qs[j] & 0x0f) | int((qh >> j) & 1) << 4;
    q[j + kQuantBlock / 2] = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
  }
}

void dequantizeQ5_0(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "Q5_0 needs whole blocks");
  for (int64_t b = 0; b < count / kQuantBlock; ++b, src += 22, out += kQuantBlock) {
    const float d = halfToFloat(load16(src));
    int q[kQuantBlock];
    q5Quants(src + 2, q);
    for (int j = 0; j < kQuantBlock; ++j)
      out[j] = d * float(q[j] - 16);
  }
}

void dequantizeQ5_1(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "Q5_1 needs whole blocks");
  for (int64_t b = 0; b < count / kQuantBlock; ++b, src += 24, out += kQuantBlock) {
    const float d = halfToFloat(load16(src));
    const float m = halfToFloat(load16(src + 2));
    int q[kQuantBlock];
    q5Quants(src + 4, q);
    for (int j = 0; j < kQuantBlock; ++j)
      out[j] = d * float(q[j]) + m;
  }
}

void unpackQ4_K(const uint8_t *block, int8_t *q, float *scales, float *minimums) {
  const float d = halfToFloat(load16(block)), dmin = halfToFloat(load16(block + 2));
  const uint8_t *packed = block + 4, *qs = block + 16;
  uint8_t scalesThenMinimums[16];
  q4KScalesMins(packed, scalesThenMinimums);
  for (int j = 0; j < 8; ++j) {
    scales[j] = d * float(scalesThenMinimums[j]);
    minimums[j] = dmin * float(scalesThenMinimums[8 + j]);
  }
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = int8_t(qs[32 * g + l] & 15);
      q[64 * g + 32 + l] = int8_t(qs[32 * g + l] >> 4);
    }
}

void unpackQ5_K(const uint8_t *block, int8_t *q, float *scales, float *minimums) {
  unpackQ4_K(block, q, scales, minimums); // same header; its quants at 16 are Q5_K's qh
  const uint8_t *qh = block + 16, *qs = block + 48;
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = int8_t((qs[32 * g + l] & 15) | ((qh[l] >> (2 * g)) & 1) << 4);
      q[64 * g + 32 + l] = int8_t((qs[32 * g + l] >> 4) | ((qh[l] >> (2 * g + 1)) & 1) << 4);
    }
}

void unpackQ6_K(const uint8_t *block, int8_t *q, float *scales) {
  const uint8_t *ql = block, *qh = block + 128;
  const auto *sc = reinterpret_cast<const int8_t *>(block + 192);
  const float d = halfToFloat(load16(block + 208));
  for (int k = 0; k < 16; ++k)
    scales[k] = d * float(sc[k]);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const int low = ql[64 * h + l], high = ql[64 * h + l + 32], bits = qh[32 * h + l];
      q[128 * h + l] = int8_t(((low & 15) | ((bits & 3) << 4)) - 32);
      q[128 * h + l + 32] = int8_t(((high & 15) | (((bits >> 2) & 3) << 4)) - 32);
      q[128 * h + l + 64] = int8_t(((low >> 4) | (((bits >> 4) & 3) << 4)) - 32);
      q[128 * h + l + 96] = int8_t(((high >> 4) | (((bits >> 6) & 3) << 4)) - 32);
    }
}

/// Q4_K and Q5_K: super-blocks of `bytes`, each unpacked by `unpack` into quants and the
/// scales and minimums of its 8 sub-blocks of 32.
static void dequantizeSubBlocks(const uint8_t *src, float *out, int64_t count, int64_t bytes,
                                void (*unpack)(const uint8_t *, int8_t *, float *, float *)) {
  int8_t q[kKQuantBlock];
  float scales[8], minimums[8];
  for (int64_t b = 0; b < count / kKQuantBlock; ++b, src += bytes, out += kKQuantBlock) {
    unpack(src, q, scales, minimums);
    for (int i = 0; i < kKQuantBlock; ++i)
      out[i] = scales[i / 32] * float(q[i]) - minimums[i / 32];
  }
}

void dequantizeQ4_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q4_K needs whole super-blocks");
  dequantizeSubBlocks(src, out, count, 144, unpackQ4_K);
}

void dequantizeQ5_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q5_K needs whole super-blocks");
  dequantizeSubBlocks(src, out, count, 176, unpackQ5_K);
}

void dequantizeQ6_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q6_K needs whole super-blocks");
  int8_t q[kKQuantBlock];
  float scales[16];
  for (int64_t b = 0; b < count / kKQuantBlock; ++b, src += 210, out += kKQuantBlock) {
    unpackQ6_K(src, q, scales);
    for (int i = 0; i < kKQuantBlock; ++i)
      out[i] = scales[i / 16] * float(q[i]);
  }
}

void dequantize(QuantFormat format, const uint8_t *src, float *out, int64_t count) {
  switch (format) {
  case QuantFormat::Q4_0:
    return dequantizeQ4_0(src, out, count);
  case QuantFormat::Q4_1:
    return dequantizeQ4_1(src, out, count);
  case QuantFormat::Q5_0:
    return dequantizeQ5_0(src, out, count);
  case QuantFormat::Q5_1:
    return dequantizeQ5_1(src, out, count);
  case QuantFormat::Q8_0:
    return dequantizeQ8_0(src, out, count);
  case QuantFormat::Q4_K:
    return dequantizeQ4_K(src, out, count);
  case QuantFormat::Q5_K:
    return dequantizeQ5_K(src, out, count);
  case QuantFormat::Q6_K:
    return dequantizeQ6_K(src, out, count);
  }
}

} // namespace nnsc::kernels

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

} // namespace nnsc::kernels

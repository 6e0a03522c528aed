//===- Dequantize.cpp - ggml block formats to fp32 --------------*- C++ -*-===//

#include "nnsc/Runtime/Kernels/Dequantize.h"

#include "Bf16.h"

#include <cassert>
#include <cstddef>
#include <cstring>

#include <immintrin.h>

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

/// Q4_0 and IQ4_NL: 18-byte blocks {fp16 d; uint8 qs[16]}, weight j = d * value(low nibble of
/// qs[j]) and weight j + 16 = d * value(high nibble).
template <typename Value>
static void dequantizeNibbleBlocks(const uint8_t *src, float *out, int64_t count,
                                   const Value &value) {
  for (int64_t b = 0; b < count / kQuantBlock; ++b, src += 18, out += kQuantBlock) {
    const float d = halfToFloat(load16(src));
    const uint8_t *qs = src + 2;
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      out[j] = d * value(qs[j] & 0x0f);
      out[j + kQuantBlock / 2] = d * value(qs[j] >> 4);
    }
  }
}

void dequantizeQ4_0(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "Q4_0 needs whole blocks");
  dequantizeNibbleBlocks(src, out, count, [](int q) { return float(q - 8); });
}

void dequantizeIQ4_NL(const uint8_t *src, float *out, int64_t count) {
  assert(count % kQuantBlock == 0 && "IQ4_NL needs whole blocks");
  dequantizeNibbleBlocks(src, out, count, [](int q) { return float(kIQ4NLValues[q]); });
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
  // 32 weights per AVX2 operation (this file's baseline, x86-64-v3): the GEMV kernels unpack
  // every super-block of every row through here, and the byte-wise loop it replaced cost as
  // much as the products (Q6_K at one row 18 -> 25 Gweights/s on a Zen 5,
  // nnsc-bench-quant-formats). The 16-bit shifts carry a neighbour byte's bits in, which the
  // masks drop.
  const uint8_t *ql = block, *qh = block + 128;
  const float d = halfToFloat(load16(block + 208));
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 192));
  const __m256i sc0 = _mm256_cvtepi8_epi32(sc), sc1 = _mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8));
  _mm256_storeu_ps(scales, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sc0)));
  _mm256_storeu_ps(scales + 8, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sc1)));
  const __m256i nibble = _mm256_set1_epi8(0x0F), twoBits = _mm256_set1_epi8(3),
                offset = _mm256_set1_epi8(32);
  auto load = [](const uint8_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  };
  // (low 4 bits | bits 4-5 from `high2`) - 32 for 32 weights, stored at `out`.
  auto put = [&](int8_t *out, __m256i low4, __m256i high2) {
    const __m256i six = _mm256_or_si256(_mm256_and_si256(low4, nibble),
                                        _mm256_slli_epi16(_mm256_and_si256(high2, twoBits), 4));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), _mm256_sub_epi8(six, offset));
  };
  for (std::ptrdiff_t h = 0; h < 2; ++h) {
    const __m256i lo = load(ql + 64 * h), hi = load(ql + 64 * h + 32), bits = load(qh + 32 * h);
    int8_t *out = q + 128 * h;
    put(out, lo, bits);
    put(out + 32, hi, _mm256_srli_epi16(bits, 2));
    put(out + 64, _mm256_srli_epi16(lo, 4), _mm256_srli_epi16(bits, 4));
    put(out + 96, _mm256_srli_epi16(hi, 4), _mm256_srli_epi16(bits, 6));
  }
}

/// Q2_K (16 sub-blocks of 16), Q4_K and Q5_K (8 of 32): super-blocks of `bytes`, each
/// unpacked by `unpack` into quants and the scales and minimums of its SubBlocks sub-blocks.
template <int SubBlocks>
static void dequantizeSubBlocks(const uint8_t *src, float *out, int64_t count, int64_t bytes,
                                void (*unpack)(const uint8_t *, int8_t *, float *, float *)) {
  constexpr int Weights = kKQuantBlock / SubBlocks;
  int8_t q[kKQuantBlock];
  float scales[SubBlocks], minimums[SubBlocks];
  for (int64_t b = 0; b < count / kKQuantBlock; ++b, src += bytes, out += kKQuantBlock) {
    unpack(src, q, scales, minimums);
    for (int i = 0; i < kKQuantBlock; ++i)
      out[i] = scales[i / Weights] * float(q[i]) - minimums[i / Weights];
  }
}

void dequantizeQ4_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q4_K needs whole super-blocks");
  dequantizeSubBlocks<8>(src, out, count, 144, unpackQ4_K);
}

void dequantizeQ5_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q5_K needs whole super-blocks");
  dequantizeSubBlocks<8>(src, out, count, 176, unpackQ5_K);
}

/// Q3_K, Q6_K and IQ4_XS: super-blocks of `bytes`, each unpacked by `unpack` into signed quants and
/// the scales of its 16 sub-blocks of 16.
static void dequantizeSignedSubBlocks(const uint8_t *src, float *out, int64_t count, int64_t bytes,
                                      void (*unpack)(const uint8_t *, int8_t *, float *)) {
  int8_t q[kKQuantBlock];
  float scales[16];
  for (int64_t b = 0; b < count / kKQuantBlock; ++b, src += bytes, out += kKQuantBlock) {
    unpack(src, q, scales);
    for (int i = 0; i < kKQuantBlock; ++i)
      out[i] = scales[i / 16] * float(q[i]);
  }
}

void dequantizeQ6_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q6_K needs whole super-blocks");
  dequantizeSignedSubBlocks(src, out, count, 210, unpackQ6_K);
}

namespace {

/// Q2_K's and Q3_K's low 2 bits: for half h and j < 4 the 32 quants 128 h + 32 j + t come from
/// bits 2j-2j+1 of qs[32 h + t], 32 per AVX2 operation (the 16-bit shifts carry a neighbour
/// byte's bits in, which the mask drops). With `hmask`, Q3_K's third bits too (bit 4 h + j of
/// hmask[t]) and the offset: q = low + 4 * third - 4.
void unpackTwoBitPlanes(const uint8_t *qs, const uint8_t *hmask, int8_t *q) {
  auto load = [](const uint8_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  };
  const __m256i two = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
  const __m256i third = hmask ? load(hmask) : _mm256_setzero_si256();
  for (std::ptrdiff_t h = 0; h < 2; ++h) {
    const __m256i bits = load(qs + 32 * h);
    for (std::ptrdiff_t j = 0; j < 4; ++j) {
      __m256i v = _mm256_and_si256(_mm256_srl_epi16(bits, _mm_cvtsi32_si128(int(2 * j))), two);
      if (hmask) {
        const __m256i t =
            _mm256_and_si256(_mm256_srl_epi16(third, _mm_cvtsi32_si128(int(4 * h + j))), one);
        v = _mm256_sub_epi8(_mm256_or_si256(v, _mm256_slli_epi16(t, 2)), four);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + 128 * h + 32 * j), v);
    }
  }
}

} // namespace

void unpackQ2_K(const uint8_t *block, int8_t *q, float *scales, float *minimums) {
  const uint8_t *packed = block;
  const float d = halfToFloat(load16(block + 80)), dmin = halfToFloat(load16(block + 82));
  // Low nibbles the scales, high the minimums, 8 per AVX2 operation.
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(packed));
  const __m128i nibble = _mm_set1_epi8(15);
  const __m128i sc = _mm_and_si128(bytes, nibble),
                mn = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
  auto widen8 = [](__m128i v, float factor, float *out) {
    _mm256_storeu_ps(
        out, _mm256_mul_ps(_mm256_set1_ps(factor), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))));
  };
  widen8(sc, d, scales);
  widen8(_mm_srli_si128(sc, 8), d, scales + 8);
  widen8(mn, dmin, minimums);
  widen8(_mm_srli_si128(mn, 8), dmin, minimums + 8);
  unpackTwoBitPlanes(block + 16, nullptr, q);
}

void unpackQ3_K(const uint8_t *block, int8_t *q, float *scales) {
  const uint8_t *packed = block + 96;
  const float d = halfToFloat(load16(block + 108));
  // The 16 6-bit scales as ggml's dequantize_row_q3_K assembles them: low nibbles from bytes
  // 0-7 (scales 0-7 the low nibbles, 8-15 the high), the top 2 bits from bytes 8-11 (scales
  // 4 g to 4 g + 3 at bits 2 g). A byte loop here cost nearly a third of the kernel's time.
  uint64_t nibbles;
  uint32_t tops;
  std::memcpy(&nibbles, packed, sizeof nibbles);
  std::memcpy(&tops, packed + 8, sizeof tops);
  const __m128i low =
      _mm_and_si128(_mm_set_epi64x(int64_t(nibbles >> 4), int64_t(nibbles)), _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(
      _mm_set_epi32(int(tops >> 6), int(tops >> 4), int(tops >> 2), int(tops)), _mm_set1_epi8(3));
  const __m128i six =
      _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32)); // signed
  _mm256_storeu_ps(scales,
                   _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(six))));
  _mm256_storeu_ps(scales + 8,
                   _mm256_mul_ps(_mm256_set1_ps(d),
                                 _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(six, 8)))));
  unpackTwoBitPlanes(block + 32, block, q);
}

void dequantizeQ2_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q2_K needs whole super-blocks");
  dequantizeSubBlocks<16>(src, out, count, 84, unpackQ2_K);
}

void dequantizeQ3_K(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "Q3_K needs whole super-blocks");
  dequantizeSignedSubBlocks(src, out, count, 110, unpackQ3_K);
}

void unpackIQ4_XS(const uint8_t *block, int8_t *q, float *scales) {
  // The codebook looked up 16 quants per vpshufb: the GEMV kernels unpack every super-block of
  // every row through here (a byte-wise loop ran them at 3.9 Gweights/s on a Zen 5).
  const float d = halfToFloat(load16(block));
  const uint16_t high = load16(block + 2);
  const uint8_t *low = block + 4, *qs = block + 8;
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i *>(kIQ4NLValues));
  const __m128i nibble = _mm_set1_epi8(0x0f);
  for (std::ptrdiff_t j = 0; j < 8; ++j) {
    const int ls = ((low[j / 2] >> (4 * (j % 2))) & 0x0f) | (((high >> (2 * j)) & 3) << 4);
    scales[2 * j] = scales[2 * j + 1] = d * float(ls - 32);
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs + 16 * j));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * j),
                     _mm_shuffle_epi8(table, _mm_and_si128(bytes, nibble)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * j + 16),
                     _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble)));
  }
}

void dequantizeIQ4_XS(const uint8_t *src, float *out, int64_t count) {
  assert(count % kKQuantBlock == 0 && "IQ4_XS needs whole super-blocks");
  dequantizeSignedSubBlocks(src, out, count, 136, unpackIQ4_XS);
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
  case QuantFormat::IQ4_NL:
    return dequantizeIQ4_NL(src, out, count);
  case QuantFormat::Q2_K:
    return dequantizeQ2_K(src, out, count);
  case QuantFormat::Q3_K:
    return dequantizeQ3_K(src, out, count);
  case QuantFormat::Q4_K:
    return dequantizeQ4_K(src, out, count);
  case QuantFormat::Q5_K:
    return dequantizeQ5_K(src, out, count);
  case QuantFormat::Q6_K:
    return dequantizeQ6_K(src, out, count);
  case QuantFormat::IQ4_XS:
    return dequantizeIQ4_XS(src, out, count);
  }
}

} // namespace nnsc::kernels

//===- QuantGemv.cpp - Dispatch of the quantized GEMV -----------*- C++ -*-===//
//
// Compiled for the library's baseline: picks the kernels of the best instruction set the CPU
// runs, once.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/QuantGemv.h"

#include "QuantGemvIsa.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace nnsc::kernels {

const char *quantFormatName(QuantFormat format) {
  switch (format) {
  case QuantFormat::Q4_0:
    return "Q4_0";
  case QuantFormat::Q4_1:
    return "Q4_1";
  case QuantFormat::Q5_0:
    return "Q5_0";
  case QuantFormat::Q5_1:
    return "Q5_1";
  case QuantFormat::Q8_0:
    return "Q8_0";
  case QuantFormat::IQ4_NL:
    return "IQ4_NL";
  case QuantFormat::Q2_K:
    return "Q2_K";
  case QuantFormat::Q3_K:
    return "Q3_K";
  case QuantFormat::Q4_K:
    return "Q4_K";
  case QuantFormat::Q5_K:
    return "Q5_K";
  case QuantFormat::Q6_K:
    return "Q6_K";
  case QuantFormat::IQ4_XS:
    return "IQ4_XS";
  }
  return "?";
}

namespace {

/// Copies rows between ggml blocks and split rows: `toSplit` gathers each block's fields into
/// the split row's regions, otherwise they are scattered back into blocks.
void convertRows(QuantFormat format, const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols,
                 bool toSplit) {
  if (isKQuant(format)) { // read as stored
    std::memcpy(dst, src,
                size_t(rows * cols / quantBlockWeights(format) * quantBlockBytes(format)));
    return;
  }
  const int64_t bytes = quantBlockBytes(format), blocks = cols / 32;
  const int64_t quantBytes = quantBlockQuantBytes(format);
  const int64_t headerBytes = bytes - quantBytes; // d, or d and m (Q4_1, Q5_1)
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *in = src + r * blocks * bytes;
    uint8_t *out = dst + r * blocks * bytes;
    for (int64_t k = 0; k < blocks; ++k) {
      // A field at `blockOffset` in block k lies at `rowOffset` in the split row.
      auto move = [&](int64_t blockOffset, int64_t rowOffset, int64_t size) {
        if (toSplit)
          std::memcpy(out + rowOffset, in + k * bytes + blockOffset, size_t(size));
        else
          std::memcpy(out + k * bytes + blockOffset, in + rowOffset, size_t(size));
      };
      move(0, 2 * k, 2);
      if (headerBytes == 4)
        move(2, 2 * blocks + 2 * k, 2);
      move(headerBytes, headerBytes * blocks + k * quantBytes, quantBytes);
    }
  }
}

} // namespace

void splitQuantRows(QuantFormat format, const uint8_t *src, uint8_t *dst, int64_t rows,
                    int64_t cols) {
  convertRows(format, src, dst, rows, cols, /*toSplit=*/true);
}

void joinQuantRows(QuantFormat format, const uint8_t *src, uint8_t *dst, int64_t rows,
                   int64_t cols) {
  convertRows(format, src, dst, rows, cols, /*toSplit=*/false);
}

bool quantIsaSupported(QuantIsa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           __builtin_cpu_supports("f16c");
  static const bool avx512 =
      avx2 && RuntimeOptions::get().quantAvx512 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  static const bool bf16Dot =
      avx512 && __builtin_cpu_supports("avx512bf16") && RuntimeOptions::get().quantBf16Dot;
  switch (isa) {
  case QuantIsa::Avx2:
    return avx2;
  case QuantIsa::Avx512:
    return avx512;
  case QuantIsa::Avx512Bf16:
    return bf16Dot;
  }
  return false;
}

QuantIsa quantBestIsa() {
  static const QuantIsa best = quantIsaSupported(QuantIsa::Avx512Bf16) ? QuantIsa::Avx512Bf16
                               : quantIsaSupported(QuantIsa::Avx512)   ? QuantIsa::Avx512
                                                                       : QuantIsa::Avx2;
  return best;
}

namespace {

template <typename T>
void dispatch(const QuantGemvArgs<T> &a, int64_t rowBegin, int64_t rowEnd, QuantIsa isa) {
  if (!quantIsaSupported(isa))
    throw InvalidInput("quantGemv: this CPU does not run the requested kernels");
  if (a.cols % quantBlockWeights(a.format) != 0)
    throw InvalidInput(std::string("quantGemv: cols must be a multiple of ") +
                       std::to_string(quantBlockWeights(a.format)) + " for " +
                       quantFormatName(a.format));
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (isa == QuantIsa::Avx512Bf16 && !a.exact && quantGemvAvx512Bf16Applies(a)) {
      quantGemvAvx512Bf16(a, rowBegin, rowEnd);
      return;
    }
  }
  if (isa == QuantIsa::Avx2)
    quantGemvAvx2(a, rowBegin, rowEnd);
  else
    quantGemvAvx512(a, rowBegin, rowEnd);
}

} // namespace

void quantGemv(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd) {
  dispatch(a, rowBegin, rowEnd, quantBestIsa());
}

void quantGemv(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  dispatch(a, rowBegin, rowEnd, quantBestIsa());
}

void quantGemv(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd, QuantIsa isa) {
  dispatch(a, rowBegin, rowEnd, isa);
}

void quantGemv(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd, QuantIsa isa) {
  dispatch(a, rowBegin, rowEnd, isa);
}

bool quantWidenServes(QuantFormat format) {
  return !isKQuant(format) && quantIsaSupported(QuantIsa::Avx2);
}

namespace {

template <typename T>
void widen(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows, int64_t cols,
           T *out) {
  if (!quantWidenServes(format))
    throw InvalidInput(std::string("widenQuantRows: ") + quantFormatName(format) +
                       " blocks are not widened here");
  if (cols % quantBlockWeights(format) != 0)
    throw InvalidInput(std::string("widenQuantRows: cols must be a multiple of ") +
                       std::to_string(quantBlockWeights(format)) + " for " +
                       quantFormatName(format));
  if (quantBestIsa() == QuantIsa::Avx2)
    widenQuantRowsAvx2(format, w, rowBytes, rows, cols, out);
  else
    widenQuantRowsAvx512(format, w, rowBytes, rows, cols, out);
}

} // namespace

void widenQuantRows(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                    int64_t cols, float *out) {
  widen(format, w, rowBytes, rows, cols, out);
}

void widenQuantRows(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                    int64_t cols, uint16_t *out) {
  widen(format, w, rowBytes, rows, cols, out);
}

} // namespace nnsc::kernels

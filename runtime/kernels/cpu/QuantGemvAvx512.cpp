//===- QuantGemvAvx512.cpp - The quantized GEMV on AVX-512 ------*- C++ -*-===//
//
// Compiled for AVX-512 F/BW/VL (see runtime/CMakeLists.txt); QuantGemv.cpp calls it only
// where the CPU has them. 16 fp32 lanes, 32 vector registers: 4 weight rows per block of
// accumulators for one activation row, 2 weight rows by 4 activation rows for several (4 by 4
// spills: 10-20% slower at 2-6 rows on a Zen 4, nnsc-bench-quant-gemv); a block's 32 weights
// are two vectors (low, high nibbles).
//
//===----------------------------------------------------------------------===//

#include "QuantGemvAvx512Isa.h"
#include "QuantGemvIsa.h"
#include "QuantGemvKQuantKernel.h"
#include "QuantGemvWidenedTile.h"
#include "QuantWidenKernel.h"

namespace nnsc::kernels {

void widenQuantRowsAvx512(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                          int64_t cols, float *out) {
  widenQuantRowsOn<Avx512>(format, w, rowBytes, rows, cols, out);
}

void widenQuantRowsAvx512(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                          int64_t cols, uint16_t *out) {
  widenQuantRowsOn<Avx512>(format, w, rowBytes, rows, cols, out);
}

void quantGemvAvx512(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd) {
  quantGemvProduct<Avx512>(a, rowBegin, rowEnd);
}

void quantGemvAvx512(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd) {
  quantGemvProduct<Avx512>(a, rowBegin, rowEnd);
}

} // namespace nnsc::kernels

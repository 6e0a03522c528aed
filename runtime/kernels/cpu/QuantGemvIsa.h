//===- QuantGemvIsa.h - The quantized GEMV per instruction set --*- C++ -*-===//
//
// Private to runtime/kernels/cpu: the entry points of QuantGemvAvx2.cpp, QuantGemvAvx512.cpp
// and QuantGemvAvx512Bf16.cpp, which QuantGemv.cpp dispatches to.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVISA_H
#define NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVISA_H

#include "nnsc/Runtime/Kernels/QuantGemv.h"

namespace nnsc::kernels {

void quantGemvAvx2(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd);
void quantGemvAvx2(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);
void quantGemvAvx512(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd);
void quantGemvAvx512(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);
/// Whether the vdpbf16ps kernel computes `a` (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K,
/// IQ4_XS or Q6_K blocks).
bool quantGemvAvx512Bf16Applies(const QuantGemvArgs<uint16_t> &a);
void quantGemvAvx512Bf16(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);
void widenQuantRowsAvx2(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                        int64_t cols, float *out);
void widenQuantRowsAvx2(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                        int64_t cols, uint16_t *out);
void widenQuantRowsAvx512(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                          int64_t cols, float *out);
void widenQuantRowsAvx512(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                          int64_t cols, uint16_t *out);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVISA_H

//===- QuantGemvIsa.h - The quantized GEMV per instruction set --*- C++ -*-===//
//
// Private to runtime/kernels/cpu: the entry points of QuantGemvAvx2.cpp and
// QuantGemvAvx512.cpp, which QuantGemv.cpp dispatches to.
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

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_CPU_QUANTGEMVISA_H

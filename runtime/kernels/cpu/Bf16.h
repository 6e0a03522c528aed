//===- Bf16.h - Scalar bf16 <-> fp32 conversions for CPU kernels -*- C++ -*-===//
//
// Private to runtime/kernels/cpu: the kernels keep bf16 as raw uint16_t so they build without
// LibTorch, and convert exactly as LibTorch does. Only for files built at the library's
// baseline ISA: an inline function also compiled in a file with -mavx512* flags (Gemv.cpp)
// could be merged into the AVX-512 copy by the linker and run on a CPU without it.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_CPU_BF16_H
#define NNSC_RUNTIME_KERNELS_CPU_BF16_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace nnsc::kernels::bf16 {

/// The fp32 value of a bf16 bit pattern (exact).
inline float widen(uint16_t v) {
  const uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Round to nearest even, as LibTorch converts fp32 to bf16 (NaN stays a quiet NaN). Both
/// results computed and one selected, so that loops over it vectorize (with a branch on NaN,
/// rmsNormBF16 ran one value at a time, 3x slower than rmsNormF32).
inline uint16_t narrow(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint32_t rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
  const uint32_t quietNaN = (bits >> 16) | 0x40;
  return uint16_t(std::isnan(v) ? quietNaN : rounded);
}

} // namespace nnsc::kernels::bf16

#endif // NNSC_RUNTIME_KERNELS_CPU_BF16_H

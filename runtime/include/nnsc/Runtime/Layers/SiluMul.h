//===- SiluMul.h - The Llama MLP's SiLU(gate) * up --------------*- C++ -*-===//
//
// One pass over the gate and up projections (kernels/cpu/SiluMul.cpp) split by rows over the
// shared thread pool, computing at::silu(gate) * up as LibTorch's vector loop does (see
// Kernels/SiluMul.h); LibTorch's two ops where the kernel does not apply (CUDA tensors,
// other dtypes).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_SILUMUL_H
#define NNSC_RUNTIME_LAYERS_SILUMUL_H

#include <torch/torch.h>

namespace nnsc {

/// silu(gate) * up -> a new contiguous [rows, n] tensor. gate, up: [rows, n] of the same
/// dtype; rows may be strided (the two halves of the fused gate/up product).
torch::Tensor siluMul(const torch::Tensor &gate, const torch::Tensor &up);

/// The same on raw rows of `dtype` (float32 or bfloat16) with unit column stride: out[r] =
/// silu(gate[r]) * up[r] for r in [0, rows), n values each, rows `gateStride`, `upStride` and
/// `outStride` elements apart (the kernel call behind siluMul on the CPU).
void siluMulRows(torch::ScalarType dtype, const void *gate, int64_t gateStride, const void *up,
                 int64_t upStride, void *out, int64_t outStride, int64_t rows, int64_t n);

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_SILUMUL_H

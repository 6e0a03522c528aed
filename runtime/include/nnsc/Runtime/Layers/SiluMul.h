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

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_SILUMUL_H

//===- Linear.h - Linear layers that pick GEMV or GEMM ----------*- C++ -*-===//
//
// A decode step multiplies a few activation rows by each weight matrix: that is bound by
// weight bandwidth, and LibTorch's GEMM does not split such shapes across threads. Up to
// GemvMaxRows rows these run the AVX-512 GEMV kernels on the shared thread pool, split by
// output rows; longer batches (prefill, large decode batches) run on oneDNN with the weight
// packed once (OneDnnLinear.h), or LibTorch's GEMM where oneDNN does not apply. A weight
// that also has its GGUF blocks (QuantizedLinear.h) runs on them for decode-sized batches, and
// may be known by its blocks and packed copy only.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_LINEAR_H
#define NNSC_RUNTIME_LAYERS_LINEAR_H

#include "nnsc/Runtime/Layers/QuantizedLinear.h"

#include <torch/torch.h>

namespace nnsc {

/// Activation rows up to which linear() and linearAdd() use the GEMV kernels.
constexpr int64_t GemvMaxRows = 16;

/// Whether linear() and linearAdd() of `rows` rows in `dtype` run on the shared
/// kernels::ThreadPool (the GEMV or the quantized kernels; `quantized`: every weight has its
/// GGUF blocks), none on oneDNN's OpenMP threads. `widened`: the weights have their widened
/// copies, which the GEMV kernels read (without them, products over the quantized path's rows
/// run on oneDNN). `tiled`: the blocks are the weights' only form (QuantizedMatrix::tiled),
/// whose row limit is higher.
bool linearRunsOnThreadPool(int64_t rows, torch::ScalarType dtype, bool quantized,
                            bool widened = true, bool tiled = false);

/// in [rows, k] @ weight[n, k]^T (+ bias [n]) -> [rows, n], in the dtype of `in` (fp32 or
/// bf16, the same for all arguments). `bias` may be undefined.
torch::Tensor linear(const torch::Tensor &in, const torch::Tensor &weight,
                     const torch::Tensor &bias = {});

/// acc [rows, n] += in [rows, k] @ weight[n, k]^T: the residual add fused into the
/// projection, as x.addmm_(in, weight.t()). When nothing else refers to acc's memory (no
/// other tensor or view shares its storage), acc may instead be rebound to a new tensor that
/// holds the sum, which no one can tell apart and saves copying the sum back.
void linearAdd(torch::Tensor &acc, const torch::Tensor &in, const torch::Tensor &weight);

/// The same with `quant` the weight's blocks (or undefined): the quantized GEMV where
/// quantizedLinearApplies(), the widened `weight` otherwise. `weight` may be undefined when
/// `quant` is defined and oneDnnServes() the dtype (a model that dropped its widened copies,
/// docs/Engine.md, "Memory"): the products the blocks do not serve then run on oneDNN's
/// packed copy of them (oneDnnLinearQuantized).
torch::Tensor linear(const torch::Tensor &in, const torch::Tensor &weight,
                     const torch::Tensor &bias, const QuantizedMatrix &quant);
void linearAdd(torch::Tensor &acc, const torch::Tensor &in, const torch::Tensor &weight,
               const QuantizedMatrix &quant);

/// Rows [begin, begin + count) of a widened weight or bias, or undefined if it is undefined
/// (none, or dropped).
torch::Tensor weightRows(const torch::Tensor &weight, int64_t begin, int64_t count);

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_LINEAR_H

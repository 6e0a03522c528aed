//===- OneDnnLinear.h - Products on oneDNN with weights packed once -*- C++ -*-===//
//
// LibTorch's fp32 at::linear calls MKL's sgemm, which takes a slow path on AMD CPUs (about
// half of oneDNN's inner product on the 2-core Zen 5 the project is measured on). LibTorch
// also carries oneDNN, but does not export its C API; it does register the ops inductor uses
// for frozen models: mkldnn::_reorder_linear_weight packs a weight into oneDNN's blocked
// layout once, mkldnn::_linear_pointwise multiplies by the packed weight. We call those
// through the dispatcher and keep each weight's packed copy in a cache.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_ONEDNNLINEAR_H
#define NNSC_RUNTIME_LAYERS_ONEDNNLINEAR_H

#include "nnsc/Runtime/Layers/QuantizedLinear.h"

#include <torch/torch.h>

namespace nnsc {

/// Whether oneDNN serves products of `dtype` here: LibTorch was built with oneDNN (its ops are
/// registered, NNSC_GEMM is not `libtorch`), the CPU has AVX-512 BW/VL/DQ (oneDNN's bf16 path
/// needs it; without it its fp32 products were measured less accurate than at::linear's), and
/// `dtype` is fp32 or bf16.
bool oneDnnServes(torch::ScalarType dtype);

/// Whether oneDnnLinear() can compute in [rows, k] @ weight[n, k]^T: oneDnnServes() the
/// dtype, all tensors are dense CPU tensors of it, and the weight has unit column stride.
bool oneDnnLinearApplies(const torch::Tensor &in, const torch::Tensor &weight);

/// in @ weight^T (+ bias), or acc + in @ weight^T when `acc` is defined (rounded once, as
/// acc.addmm_ does), on oneDNN with `weight` packed on first use. Shapes are the caller's to
/// check. The packed copy is reused while the weight's storage lives and, outside inference
/// mode, while its version is unchanged; weights must not be written in place under
/// inference mode after their first product.
torch::Tensor oneDnnLinear(const torch::Tensor &in, const torch::Tensor &weight,
                           const torch::Tensor &bias, const torch::Tensor &acc = {});

/// Packs `weight` [n, k] now if oneDNN would serve products with it (as oneDnnLinearApplies),
/// so the first product finds it packed. Loading calls it: packing the 135M model's fp32
/// weights takes about 0.2 s, which would otherwise fall in the first batched step.
void oneDnnPack(const torch::Tensor &weight);

/// oneDnnLinear() for a weight known by its GGUF blocks only (loaded without its widened copy,
/// docs/Engine.md, "Memory"): with the copy oneDnnPackQuantized() packed, or one packed now
/// from quant.widen() (the same values the loader widens; a row range of it, as a hooked split
/// path's q_proj, gets its own) and kept while the blocks live. `in` decides the dtype;
/// oneDnnServes() it. A `tiled` matrix (ProjectionForms::BlocksOnly; docs/Engine.md, "Blocks
/// only") gets no packed copy: its rows are widened from the blocks (QuantizedMatrix::
/// widenRows) into a plain tile of up to 16 MB, one per thread and reused, that oneDNN
/// multiplies as it is; a larger matrix takes several tiles, each product copied into its
/// columns of the result (with `acc`, each tile's sum rounded once as here).
torch::Tensor oneDnnLinearQuantized(const torch::Tensor &in, const QuantizedMatrix &quant,
                                    const torch::Tensor &bias, const torch::Tensor &acc = {});

/// Packs the copy oneDnnLinearQuantized() uses for `quant` in `dtype` now, from quant.widen(),
/// unless it is packed already: so the first product over the row limit does not pay for it.
/// Does nothing where oneDNN does not serve `dtype`, nor for a `tiled` matrix.
void oneDnnPackQuantized(const QuantizedMatrix &quant, torch::ScalarType dtype);

/// Number of packed weights currently cached (for tests).
size_t oneDnnPackedWeights();

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_ONEDNNLINEAR_H

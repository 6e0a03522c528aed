//===- QuantizedLinear.h - Linears on a GGUF file's own blocks --*- C++ -*-===//
//
// Decode with a batch of a few rows streams every weight once per step. A projection loaded
// from a Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / Q4_K / Q5_K / Q6_K GGUF tensor keeps the file's
// blocks next to its widened copy, and up to quantDecodeMaxRows(dtype) activation rows the product
// runs the quantized GEMV kernels (Kernels/QuantGemv.h) on them: 4.5-8.5 bits per weight read
// instead of 32 (fp32) or 16 (bf16). Longer batches (prefill) run on oneDNN's packed copy of the
// widened weights, which a load may keep in place of them (ProjectionForms::BlocksAndPacked);
// where oneDNN does not serve the dtype (no AVX-512), the blocks serve fp32 far longer and bf16
// at every row count, LibTorch's GEMM the rest. The choice is per call, on the number of rows;
// NNSC_QUANT_DECODE switches it (docs/Engine.md, "Quantized decode").
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_QUANTIZEDLINEAR_H
#define NNSC_RUNTIME_LAYERS_QUANTIZEDLINEAR_H

#include "nnsc/Runtime/Kernels/QuantGemv.h"
#include "nnsc/Runtime/Layers/ProductOrder.h"

#include <torch/torch.h>

#include <vector>

namespace nnsc {

/// The row limit in force for activations of `dtype` against a matrix that is `tiled` or
/// not: NNSC_QUANT_DECODE=off (or 0) turns the quantized path off (the loader then keeps no
/// blocks), NNSC_QUANT_DECODE=N uses it up to N rows; unset or "on" means the default for the
/// dtype, the form and whether oneDNN serves the dtype on this CPU (QuantizedLinear.cpp says
/// what each default was measured against). Read once. Throws InvalidInput for another value.
int64_t quantDecodeMaxRows(torch::ScalarType dtype, bool tiled = false);

/// Whether the quantized path is on at all (what the loader asks: keep the blocks or not).
bool quantDecodeEnabled();

/// A weight [rows, cols] as the rows of ggml blocks of a GGUF tensor, copied from the file and
/// rearranged into the kernels' split-row layout (kernels::splitQuantRows).
struct QuantizedMatrix {
  kernels::QuantFormat format = kernels::QuantFormat::Q4_1;
  torch::Tensor blocks; // uint8 [rows, cols / quantBlockWeights * quantBlockBytes], split rows
  int64_t cols = 0;
  /// The rows after `blocks` where a fused projection's parts come in different formats (a
  /// llama.cpp Q4_K_M file's Q5_0 q/k rows with Q8_0 v rows): single-format matrices of `cols`
  /// columns, in row order, each of a format other than the one before it. Empty when the
  /// whole matrix has one format. The products run one kernel call per part.
  std::vector<QuantizedMatrix> rest;
  /// Products over the quantized row limit multiply tiles of rows dequantized from the blocks
  /// (oneDnnLinearQuantized) instead of a packed copy of the whole matrix: no copy of the weights
  /// outlives a product (ProjectionForms::BlocksOnly).
  bool tiled = false;

  /// From ggml blocks as a GGUF file stores them: uint8 [rows, cols / block weights * block
  /// bytes].
  static QuantizedMatrix fromGgmlBlocks(kernels::QuantFormat format, const torch::Tensor &ggml,
                                        int64_t cols);
  /// The ggml blocks again, [rows, cols / block weights * block bytes] (for dequantization);
  /// a matrix of one format only (`rest` empty).
  torch::Tensor ggmlBlocks() const;
  /// The weights [rows(), cols] in `dtype` (fp32 or bf16), each part dequantized by the
  /// loader's own decoders (Kernels/Dequantize.h) or by the kernels that give their values
  /// (widenQuantRows), and rounded to `dtype` as the loader rounds its widened copy: equal to
  /// the rows the loader widened from the same blocks (a NaN weight aside: NaN either way).
  torch::Tensor widen(torch::ScalarType dtype) const;
  /// Rows [begin, begin + count) of widen(dtype), written to `out` (count * cols elements of
  /// `dtype`) without allocating once the per-thread buffers have grown: a tile of
  /// oneDnnLinearQuantized on a tiled matrix.
  void widenRows(int64_t begin, int64_t count, torch::ScalarType dtype, void *out) const;

  bool defined() const { return blocks.defined(); }
  int64_t rows() const;
  /// Bytes of the blocks.
  int64_t bytes() const;
  /// The single-format parts in row order: this one's own rows (`rest` left out), then `rest`.
  std::vector<QuantizedMatrix> parts() const;
  /// Rows [begin, begin + count) (views of the same blocks).
  QuantizedMatrix narrowRows(int64_t begin, int64_t count) const;
  /// Rows `ids` (int64 [n], each in [0, rows())) in that order, as copies of their blocks:
  /// with widen(), an embedding lookup on the blocks. A matrix of one format only.
  QuantizedMatrix selectRows(const torch::Tensor &ids) const;
  /// Columns [begin, begin + count) as a copy, or undefined unless both are whole blocks.
  QuantizedMatrix narrowCols(int64_t begin, int64_t count) const;
  /// The rows of `parts` one after another, as torch::cat does for the widened weights;
  /// undefined unless every part is defined with the same cols. Neighbouring rows of one format
  /// share one block tensor; a change of format starts a new entry of `rest`.
  static QuantizedMatrix cat(const std::vector<QuantizedMatrix> &parts);
};

/// Moves the blocks of `matrices` (undefined ones skipped), in the order given, into one
/// buffer: a decode step then streams a single region in the order it reads it, on transparent
/// huge pages where the kernel grants them (madvise), so neither the TLB nor the hardware
/// prefetchers restart at every 4 KiB page. Each matrix starts on a cache line.
void packQuantized(const std::vector<QuantizedMatrix *> &matrices);

/// Whether the quantized kernels can compute in [rows, cols] @ w^T: `w` is defined, `in` is a
/// CPU fp32 or bf16 matrix with unit column stride and w.cols columns, and the CPU runs the
/// kernels. Any number of rows.
bool quantizedKernelsServe(const torch::Tensor &in, const QuantizedMatrix &w);
/// Whether linear() takes them for `in` by default: they serve and `in` has at most
/// quantDecodeMaxRows(its dtype) rows (past that a packed GEMM is faster).
bool quantizedLinearApplies(const torch::Tensor &in, const QuantizedMatrix &w);
/// y[batch, w.rows()] = (or += with `accumulate`) in[batch, w.cols] w^T (+ bias[w.rows()]) on
/// raw rows of `dtype` (fp32 or bf16) with unit column stride, on the thread pool: the kernel
/// call behind quantizedLinear/quantizedLinearAdd, for callers that checked the shapes. In
/// this thread's ProductOrder::RowInvariant every row takes the kernels' exact form.
void quantizedProduct(const QuantizedMatrix &w, torch::ScalarType dtype, const void *in,
                      int64_t inStride, int64_t batch, const void *bias, void *y, int64_t yStride,
                      bool accumulate);

/// in @ w^T (+ bias, of in's dtype) -> [rows, w.rows()] in in's dtype. Check
/// quantizedKernelsServe() first.
torch::Tensor quantizedLinear(const torch::Tensor &in, const QuantizedMatrix &w,
                              const torch::Tensor &bias = {});

/// acc [rows, w.rows()] (in's dtype, unit column stride) += in @ w^T.
void quantizedLinearAdd(torch::Tensor &acc, const torch::Tensor &in, const QuantizedMatrix &w);

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_QUANTIZEDLINEAR_H

//===- QuantGemv.h - GEMV on ggml quantized blocks as stored ----*- C++ -*-===//
//
// Decode reads every weight once per token, so its speed is the number of weight bytes it
// streams. These kernels read the GGUF file's own blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL:
// 32 weights along the input dimension per block; Q2_K to Q6_K, IQ4_XS: 256) and widen them in
// registers.
// The activations are never quantized: products are of fp32 (or exactly widened bf16) activations
// and accumulate in fp32 with FMAs. For two or more activation rows each weight widens to exactly
// the fp32 value dequantize*() produces (d * q, or d * q + m rounded twice, no fused multiply-add),
// once for all rows, so the result is the fp32 product with the dequantized weights up to
// summation order. For a single row (batch-1 decode) a block's dot product is computed as
// d * sum(q x) + m * sum(x) (m = -8 d for Q4_0, -16 d for Q5_0, none for Q8_0 and IQ4_NL, whose
// q is its codebook value): the quants are exact integers and each scale is applied once per
// block instead of once per weight, the same sum rounded differently (within
// gamma_n * sum(|w| + 2 |m|) |x|, see the tests). The K-quants' weights are widened to exactly
// dequantize*()'s values (sub-block scale times quant, minus the sub-block minimum for Q2_K, Q4_K
// and Q5_K), except against a single row, where Q4_K, Q5_K and IQ4_XS take the factored form per
// 32-weight sub-block. A bf16 output is rounded once, to nearest even.
//
// The kernels read the blocks rearranged per row (splitQuantRows): a row's fp16 scales side by
// side, then its minimums (Q4_1), then its quants. Same bytes, same bits, another order: the
// single-row kernel widens 16 blocks' scales in one instruction instead of one scalar
// conversion and broadcast per block and row, which made it compute-bound below the memory's
// bandwidth (docs/Engine.md, "Quantized decode").
//
// Two instruction sets, picked at run time: AVX2 + FMA + F16C, the library's baseline
// (x86-64-v3), and AVX-512 (F, BW, VL) where the CPU has it (NNSC_QUANT_AVX512=0 keeps such a
// CPU on AVX2, for A/B measurements).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_QUANTGEMV_H
#define NNSC_RUNTIME_KERNELS_QUANTGEMV_H

#include <cstdint>

namespace nnsc::kernels {

/// The block formats the kernels read (layouts in Dequantize.h): 32-weight blocks, and the
/// 256-weight super-blocks of the K-quants and of IQ4_XS. IQ4_NL and IQ4_XS are 4-bit indices
/// into ggml's fixed non-linear codebook (kIQ4NLValues).
enum class QuantFormat {
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  IQ4_NL,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_XS
};

/// Whether `format` has 256-weight super-blocks with sub-block scales: the K-quants, and
/// IQ4_XS (read by the same kernels; "K-quant" below includes it).
constexpr bool isKQuant(QuantFormat format) {
  return format == QuantFormat::Q2_K || format == QuantFormat::Q3_K ||
         format == QuantFormat::Q4_K || format == QuantFormat::Q5_K ||
         format == QuantFormat::Q6_K || format == QuantFormat::IQ4_XS;
}

/// Weights per block along a row: 32, or 256 for the K-quants.
constexpr int64_t quantBlockWeights(QuantFormat format) { return isKQuant(format) ? 256 : 32; }

/// Bytes of one block: 18 (Q4_0, IQ4_NL), 20 (Q4_1), 22 (Q5_0), 24 (Q5_1), 34 (Q8_0), 84
/// (Q2_K), 110 (Q3_K), 144 (Q4_K), 176 (Q5_K), 210 (Q6_K), 136 (IQ4_XS).
constexpr int64_t quantBlockBytes(QuantFormat format) {
  switch (format) {
  case QuantFormat::Q4_0:
  case QuantFormat::IQ4_NL:
    return 18;
  case QuantFormat::Q4_1:
    return 20;
  case QuantFormat::Q5_0:
    return 22;
  case QuantFormat::Q5_1:
    return 24;
  case QuantFormat::Q8_0:
    return 34;
  case QuantFormat::Q2_K:
    return 84;
  case QuantFormat::Q3_K:
    return 110;
  case QuantFormat::Q4_K:
    return 144;
  case QuantFormat::Q5_K:
    return 176;
  case QuantFormat::Q6_K:
    return 210;
  case QuantFormat::IQ4_XS:
    return 136;
  }
  return 0;
}

/// Bytes of a 32-weight block's quants: 16 (Q4_0, Q4_1, IQ4_NL: two 4-bit weights a byte), 20
/// (Q5_0, Q5_1: the 32 fifth bits qh, then the low 4 bits as in Q4_0), 32 (Q8_0). The rest of the
/// block is its fp16 scale d and, for Q4_1 and Q5_1, its fp16 minimum m.
constexpr int64_t quantBlockQuantBytes(QuantFormat format) {
  switch (format) {
  case QuantFormat::Q5_0:
  case QuantFormat::Q5_1:
    return 20;
  case QuantFormat::Q8_0:
    return 32;
  case QuantFormat::Q4_0:
  case QuantFormat::Q4_1:
  case QuantFormat::IQ4_NL:
  case QuantFormat::Q2_K: // not split (read as stored)
  case QuantFormat::Q3_K:
  case QuantFormat::Q4_K:
  case QuantFormat::Q5_K:
  case QuantFormat::Q6_K:
  case QuantFormat::IQ4_XS:
    return 16;
  }
  return 16;
}

/// Whether a 32-weight block has an fp16 minimum m after its scale (x = d * q + m).
constexpr bool quantHasMinimum(QuantFormat format) {
  return format == QuantFormat::Q4_1 || format == QuantFormat::Q5_1;
}

/// "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
/// "IQ4_XS".
const char *quantFormatName(QuantFormat format);

/// Rearranges `rows` rows of cols / 32 ggml blocks of `format` (as a GGUF file stores them,
/// `src`) into the kernels' split-row layout in `dst` (as many bytes, not overlapping): per
/// row the fp16 scale d of every block, then for Q4_1/Q5_1 the fp16 minimum m of every block,
/// then the quants of every block (quantBlockQuantBytes), each part in block order.
/// The K-quants' kernels read the super-blocks as stored: their rows are copied unchanged.
void splitQuantRows(QuantFormat format, const uint8_t *src, uint8_t *dst, int64_t rows,
                    int64_t cols);

/// The inverse of splitQuantRows: ggml blocks again (for dequantize*() and column slices).
void joinQuantRows(QuantFormat format, const uint8_t *src, uint8_t *dst, int64_t rows,
                   int64_t cols);

/// Whether widenQuantRows() serves `format` on this CPU: the 32-weight formats, where the
/// kernels run (AVX2 at least).
bool quantWidenServes(QuantFormat format);

/// `rows` rows of W [rows, cols] in the split-row layout (splitQuantRows), `rowBytes` apart,
/// as exactly dequantize*()'s fp32 values, written row-major to `out`; the bf16 overload
/// rounds them to nearest even, as LibTorch converts (a NaN stays a quiet NaN). Throws InvalidInput
/// where quantWidenServes() is false or cols is not a multiple of 32.
void widenQuantRows(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                    int64_t cols, float *out);
void widenQuantRows(QuantFormat format, const uint8_t *w, int64_t rowBytes, int64_t rows,
                    int64_t cols, uint16_t *out);

/// The instruction sets of the kernels. Avx512Bf16 is Avx512 plus the vdpbf16ps kernels for bf16
/// activations against Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (QuantGemvAvx512Bf16.cpp), Q4_K, Q5_K,
/// IQ4_XS and Q6_K blocks (QuantGemvAvx512Bf16KQuant.cpp); every other product of it runs the
/// Avx512 kernels.
enum class QuantIsa { Avx2, Avx512, Avx512Bf16 };

/// Whether this CPU runs the kernels of `isa` (AVX-512: not with NNSC_QUANT_AVX512=0; the
/// vdpbf16ps kernel: not with NNSC_QUANT_BF16DOT=0 either, for A/B runs).
bool quantIsaSupported(QuantIsa isa);

/// The best instruction set this CPU runs (what quantGemv() uses).
QuantIsa quantBestIsa();

/// One product y = x W^T (+ bias) (+ y), W [rows, cols] stored as `rows` rows of
/// cols / quantBlockWeights(format) blocks in the split-row layout (splitQuantRows),
/// `rowBytes` apart. Activations, output and bias are fp32 (`float`) or bf16 bits
/// (`uint16_t`). `cols` must be a multiple of quantBlockWeights(format).
template <typename T> struct QuantGemvArgs {
  QuantFormat format = QuantFormat::Q4_1;
  const uint8_t *w = nullptr;
  int64_t rowBytes = 0;
  const T *x = nullptr;    // [batch, cols], rows xStride elements apart
  T *y = nullptr;          // [batch, rows], rows yStride elements apart
  const T *bias = nullptr; // [rows], or null
  int64_t rows = 0, cols = 0, batch = 0, xStride = 0, yStride = 0;
  /// y += x W^T instead of y = x W^T.
  bool accumulate = false;
  /// Every activation row in the exact form (each weight widened to its dequantized value, the
  /// products summed in one order for any batch), so that a row's result does not depend on
  /// the rows beside it; otherwise a row alone in its tile takes the factored form (fewer
  /// instructions, rounded differently) and bf16 rows may take the vdpbf16ps kernel.
  bool exact = false;
};

/// Computes output columns [rowBegin, rowEnd) of `a` (rows of W) with the best instruction
/// set, or with `isa` (which must be supported).
void quantGemv(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd);
void quantGemv(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd);
void quantGemv(const QuantGemvArgs<float> &a, int64_t rowBegin, int64_t rowEnd, QuantIsa isa);
void quantGemv(const QuantGemvArgs<uint16_t> &a, int64_t rowBegin, int64_t rowEnd, QuantIsa isa);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_QUANTGEMV_H

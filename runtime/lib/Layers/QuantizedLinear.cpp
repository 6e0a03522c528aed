//===- QuantizedLinear.cpp - Linears on a GGUF file's own blocks -*- C++ -*-===//

#include "nnsc/Runtime/Layers/QuantizedLinear.h"

#include "nnsc/Runtime/Kernels/Dequantize.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Layers/RowSpans.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

namespace nnsc {

namespace {

int64_t alignUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

/// `bytes` of zeroed memory straight from mmap, `align`-aligned (a power of two, at least a
/// page), unmapped when the tensor's storage goes. Unlike the heap's, its pages leave the
/// resident set as soon as they are freed, so the copies that the load's later steps
/// (fusing, packQuantized) replace do not add to the peak RSS.
torch::Tensor mappedBytes(int64_t bytes, int64_t align) {
  const size_t length = size_t(bytes + align);
  void *base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    throw std::bad_alloc();
  auto *start =
      reinterpret_cast<void *>(alignUp(int64_t(reinterpret_cast<uintptr_t>(base)), align));
  return torch::from_blob(
      start, {bytes}, [base, length](void *) { ::munmap(base, length); }, torch::kUInt8);
}

constexpr int64_t PageBytes = 4096;

template <typename T> void run(const kernels::QuantGemvArgs<T> &a) {
  forWeightRowParts(a.rows, a.cols,
                    [&](int64_t begin, int64_t end) { kernels::quantGemv(a, begin, end); });
}

/// y (+)= in @ w^T (+ bias) for the tensor entries, which checked the shapes.
void product(const torch::Tensor &in, const QuantizedMatrix &w, const torch::Tensor &bias,
             torch::Tensor &y, bool accumulate) {
  quantizedProduct(w, in.scalar_type(), in.data_ptr(), in.stride(0), in.size(0),
                   bias.defined() ? bias.data_ptr() : nullptr, y.data_ptr(), y.stride(0),
                   accumulate);
}

/// Activation rows up to which a projection with quantized blocks uses them by default, per
/// activation dtype: the last batch sizes where batched decode on the blocks beat the same
/// steps on oneDNN's packed copies end to end (bench/quant_crossover.py; the runs in
/// docs/Engine.md, "Quantized decode", and docs/journal/2026-11-27-quantized-decode.md).
constexpr int64_t QuantDecodeDefaultMaxRowsF32 = 24;
constexpr int64_t QuantDecodeDefaultMaxRowsBF16 = 16;

/// The same for a matrix without a packed copy (QuantizedMatrix::tiled, `--weights blocks`),
/// whose products over the limit widen tiles of its blocks every time, measured against those
/// tiles end to end (docs/Engine.md, "Blocks only"; docs/journal/2026-11-28-quantized-kernels.md).
constexpr int64_t QuantDecodeTiledMaxRowsF32 = 32;
constexpr int64_t QuantDecodeTiledMaxRowsBF16 = 24;

/// Where oneDNN does not serve the dtype (a CPU without AVX-512: OneDnnLinear.h), products over
/// the limit run LibTorch's GEMM, against which the quantized kernels' widened tiles
/// (QuantGemvWidenedTile.h) keep winning far longer in fp32, and which in bf16 computes each
/// output as its own dot product, so bf16 has no limit there (the 64-request runs with
/// NNSC_QUANT_DECODE=N: docs/journal/2026-11-29-batch-invariance.md).
constexpr int64_t QuantDecodeNoOneDnnMaxRowsF32 = 128;
constexpr int64_t QuantDecodeNoOneDnnMaxRowsBF16 = std::numeric_limits<int64_t>::max();

} // namespace

int64_t quantDecodeMaxRows(torch::ScalarType dtype, bool tiled) {
  if (const std::optional<int64_t> &rows = RuntimeOptions::get().quantDecodeMaxRows)
    return *rows;
  const bool bf16 = dtype == torch::kBFloat16;
  if (!oneDnnServes(dtype)) // a matrix is tiled only where oneDNN serves (ModelWeights.cpp)
    return bf16 ? QuantDecodeNoOneDnnMaxRowsBF16 : QuantDecodeNoOneDnnMaxRowsF32;
  if (bf16)
    return tiled ? QuantDecodeTiledMaxRowsBF16 : QuantDecodeDefaultMaxRowsBF16;
  return tiled ? QuantDecodeTiledMaxRowsF32 : QuantDecodeDefaultMaxRowsF32;
}

bool quantDecodeEnabled() {
  return quantDecodeMaxRows(torch::kFloat32) > 0 || quantDecodeMaxRows(torch::kBFloat16) > 0;
}

int64_t QuantizedMatrix::rows() const {
  int64_t n = blocks.size(0);
  for (const QuantizedMatrix &part : rest)
    n += part.blocks.size(0);
  return n;
}

int64_t QuantizedMatrix::bytes() const {
  int64_t n = defined() ? blocks.numel() : 0;
  for (const QuantizedMatrix &part : rest)
    n += part.blocks.numel();
  return n;
}

std::vector<QuantizedMatrix> QuantizedMatrix::parts() const {
  if (!defined())
    return {};
  QuantizedMatrix own = *this;
  own.rest.clear();
  std::vector<QuantizedMatrix> out{own};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

QuantizedMatrix QuantizedMatrix::selectRows(const torch::Tensor &ids) const {
  TORCH_CHECK(rest.empty(), "selectRows: a matrix of ", rest.size() + 1, " formats");
  QuantizedMatrix m = *this;
  m.blocks = blocks.index_select(0, ids); // throws for an id out of range
  return m;
}

QuantizedMatrix QuantizedMatrix::narrowRows(int64_t begin, int64_t count) const {
  TORCH_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "narrowRows: rows [", begin,
              ", ", begin + count, ") of a matrix of ", rows());
  if (rest.empty() || count == 0) {
    QuantizedMatrix m = *this;
    m.rest.clear();
    m.blocks = rest.empty() ? blocks.narrow(0, begin, count) : blocks.narrow(0, 0, 0);
    return m;
  }
  std::vector<QuantizedMatrix> kept;
  int64_t first = 0; // of the part, in this matrix
  for (QuantizedMatrix &part : parts()) {
    const int64_t n = part.blocks.size(0);
    const int64_t from = std::max(begin, first), to = std::min(begin + count, first + n);
    if (from < to) {
      part.blocks = part.blocks.narrow(0, from - first, to - from);
      kept.push_back(part);
    }
    first += n;
  }
  QuantizedMatrix m = kept[0];
  m.rest.assign(kept.begin() + 1, kept.end());
  return m;
}

QuantizedMatrix QuantizedMatrix::fromGgmlBlocks(kernels::QuantFormat format,
                                                const torch::Tensor &ggml, int64_t cols) {
  const torch::Tensor in = ggml.contiguous();
  QuantizedMatrix m;
  m.format = format;
  m.cols = cols;
  m.blocks = mappedBytes(in.numel(), PageBytes).view(in.sizes());
  kernels::splitQuantRows(format, in.data_ptr<uint8_t>(), m.blocks.data_ptr<uint8_t>(), in.size(0),
                          cols);
  return m;
}

torch::Tensor QuantizedMatrix::ggmlBlocks() const {
  TORCH_CHECK(rest.empty(), "ggmlBlocks: a matrix of ", rest.size() + 1, " formats");
  const torch::Tensor in = blocks.contiguous();
  torch::Tensor out = torch::empty_like(in);
  kernels::joinQuantRows(format, in.data_ptr<uint8_t>(), out.data_ptr<uint8_t>(), in.size(0), cols);
  return out;
}

torch::Tensor QuantizedMatrix::widen(torch::ScalarType dtype) const {
  TORCH_CHECK(defined(), "widen: no blocks");
  torch::Tensor out = torch::empty({rows(), cols}, dtype);
  widenRows(0, rows(), dtype, out.data_ptr());
  return out;
}

void QuantizedMatrix::widenRows(int64_t begin, int64_t count, torch::ScalarType dtype,
                                void *out) const {
  TORCH_CHECK(dtype == torch::kFloat32 || dtype == torch::kBFloat16, "widenRows: ", dtype,
              " is neither fp32 nor bf16");
  TORCH_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "widenRows: rows [", begin, ", ",
              begin + count, ") of a matrix of ", rows());
  // Per thread, reused (the K-quants): one part's rows as ggml blocks, and as fp32 for bf16.
  thread_local std::vector<uint8_t> ggml;
  thread_local std::vector<float> wide;
  const bool f32 = dtype == torch::kFloat32;
  const int64_t elementBytes = f32 ? 4 : 2;
  auto *target = static_cast<uint8_t *>(out);
  int64_t first = 0; // of the part, in this matrix
  for (const QuantizedMatrix &part : parts()) {
    const int64_t partRows = part.blocks.size(0), rowBytes = part.blocks.stride(0);
    const int64_t from = std::max(begin, first), to = std::min(begin + count, first + partRows);
    first += partRows;
    if (from >= to)
      continue;
    const int64_t n = to - from;
    const uint8_t *blocks =
        part.blocks.data_ptr<uint8_t>() + (from - (first - partRows)) * rowBytes;
    if (kernels::quantWidenServes(part.format)) {
      if (f32)
        kernels::widenQuantRows(part.format, blocks, rowBytes, n, cols,
                                reinterpret_cast<float *>(target));
      else
        kernels::widenQuantRows(part.format, blocks, rowBytes, n, cols,
                                reinterpret_cast<uint16_t *>(target));
    } else { // the K-quants: joined into ggml blocks for the loader's dequantize*()
      ggml.resize(size_t(n * rowBytes));
      kernels::joinQuantRows(part.format, blocks, ggml.data(), n, cols);
      wide.resize(size_t(f32 ? 0 : n * cols));
      float *values = f32 ? reinterpret_cast<float *>(target) : wide.data();
      kernels::dequantize(part.format, ggml.data(), values, n * cols);
      auto *bf = reinterpret_cast<c10::BFloat16 *>(target); // to nearest even, as Tensor::to
      for (int64_t i = 0; !f32 && i < n * cols; ++i)
        bf[i] = c10::BFloat16(values[i]);
    }
    target += n * cols * elementBytes;
  }
}

QuantizedMatrix QuantizedMatrix::narrowCols(int64_t begin, int64_t count) const {
  if (!rest.empty()) {
    std::vector<QuantizedMatrix> narrowed;
    for (const QuantizedMatrix &part : parts())
      narrowed.push_back(part.narrowCols(begin, count));
    return cat(narrowed);
  }
  const int64_t blockCols = kernels::quantBlockWeights(format);
  if (!defined() || begin % blockCols || count % blockCols)
    return {};
  const int64_t blockBytes = kernels::quantBlockBytes(format);
  return fromGgmlBlocks(
      format,
      ggmlBlocks().narrow(1, begin / blockCols * blockBytes, count / blockCols * blockBytes),
      count);
}

QuantizedMatrix QuantizedMatrix::cat(const std::vector<QuantizedMatrix> &matrices) {
  // Runs of neighbouring single-format parts of one format.
  std::vector<std::vector<QuantizedMatrix>> runs;
  for (const QuantizedMatrix &m : matrices) {
    if (!m.defined() || m.cols != matrices[0].cols)
      return {};
    for (const QuantizedMatrix &part : m.parts()) {
      if (runs.empty() || runs.back()[0].format != part.format)
        runs.emplace_back();
      runs.back().push_back(part);
    }
  }
  if (runs.empty())
    return {};
  std::vector<QuantizedMatrix> joined;
  for (const std::vector<QuantizedMatrix> &run : runs) {
    std::vector<torch::Tensor> blocks;
    int64_t rows = 0;
    for (const QuantizedMatrix &p : run) {
      blocks.push_back(p.blocks);
      rows += p.blocks.size(0);
    }
    QuantizedMatrix m = run[0];
    const int64_t rowBytes = run[0].blocks.size(1);
    m.blocks = mappedBytes(rows * rowBytes, PageBytes).view({rows, rowBytes});
    torch::cat_out(m.blocks, blocks);
    joined.push_back(m);
  }
  QuantizedMatrix m = joined[0];
  m.rest.assign(joined.begin() + 1, joined.end());
  return m;
}

void packQuantized(const std::vector<QuantizedMatrix *> &matrices) {
  constexpr int64_t Line = 64, HugePage = int64_t(2) << 20;
  int64_t total = 0;
  for (const QuantizedMatrix *m : matrices)
    for (const QuantizedMatrix &part : m->parts())
      total += alignUp(part.bytes(), Line);
  if (total == 0)
    return;
  total = alignUp(total, HugePage);
  torch::Tensor arena = mappedBytes(total, HugePage);
  // Advice only: without transparent huge pages the buffer is still one ordered region.
  ::madvise(arena.data_ptr(), size_t(total), MADV_HUGEPAGE);
  int64_t offset = 0;
  auto pack = [&](torch::Tensor &blocks) {
    torch::Tensor packed = arena.narrow(0, offset, blocks.numel()).view(blocks.sizes());
    packed.copy_(blocks);
    blocks = packed;
    offset += alignUp(packed.numel(), Line);
  };
  for (QuantizedMatrix *m : matrices) {
    if (!m->defined())
      continue;
    pack(m->blocks);
    for (QuantizedMatrix &part : m->rest)
      pack(part.blocks);
  }
}

void quantizedProduct(const QuantizedMatrix &w, torch::ScalarType dtype, const void *in,
                      int64_t inStride, int64_t batch, const void *bias, void *y, int64_t yStride,
                      bool accumulate) {
  // One kernel call per single-format part of w (its own blocks, then `rest`), into its
  // columns of y. Reads each part's format, blocks and cols only, so w is its first part.
  int64_t firstRow = 0; // of the part, in w
  auto fill = [&](const QuantizedMatrix &part, auto &a) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(a.x)>>;
    a.format = part.format;
    a.w = static_cast<const uint8_t *>(part.blocks.data_ptr());
    a.rowBytes = part.blocks.stride(0);
    a.x = static_cast<const T *>(in);
    a.y = static_cast<T *>(y) + firstRow;
    a.bias = bias ? static_cast<const T *>(bias) + firstRow : nullptr;
    a.rows = part.blocks.size(0);
    a.cols = part.cols;
    a.batch = batch;
    a.xStride = inStride;
    a.yStride = yStride;
    a.accumulate = accumulate;
    a.exact = productOrder() == ProductOrder::RowInvariant;
  };
  auto runPart = [&](const QuantizedMatrix &part) {
    if (dtype == torch::kBFloat16) {
      kernels::QuantGemvArgs<uint16_t> a;
      fill(part, a);
      run(a);
    } else {
      kernels::QuantGemvArgs<float> a;
      fill(part, a);
      run(a);
    }
    firstRow += part.blocks.size(0);
  };
  runPart(w);
  for (const QuantizedMatrix &part : w.rest)
    runPart(part);
}

bool quantizedKernelsServe(const torch::Tensor &in, const QuantizedMatrix &w) {
  static const bool supported = kernels::quantIsaSupported(kernels::QuantIsa::Avx2);
  const auto type = in.scalar_type();
  return supported && w.defined() && in.dim() == 2 && in.size(1) == w.cols &&
         (type == torch::kFloat32 || type == torch::kBFloat16) && in.stride(1) == 1 &&
         in.device().is_cpu() && w.blocks.stride(1) == 1;
}

bool quantizedLinearApplies(const torch::Tensor &in, const QuantizedMatrix &w) {
  return quantizedKernelsServe(in, w) &&
         in.size(0) <= quantDecodeMaxRows(in.scalar_type(), w.tiled);
}

torch::Tensor quantizedLinear(const torch::Tensor &in, const QuantizedMatrix &w,
                              const torch::Tensor &bias) {
  TORCH_CHECK(quantizedKernelsServe(in, w), "quantizedLinear: input ", in.sizes(), " ",
              in.scalar_type(), " cannot use the quantized weight [", w.rows(), ", ", w.cols, "]");
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w.rows() &&
                                  bias.scalar_type() == in.scalar_type() && bias.is_contiguous()),
              "quantizedLinear: bias ", bias.sizes(), " does not match [", w.rows(), "]");
  torch::Tensor y = torch::empty({in.size(0), w.rows()}, in.options());
  product(in, w, bias, y, /*accumulate=*/false);
  return y;
}

void quantizedLinearAdd(torch::Tensor &acc, const torch::Tensor &in, const QuantizedMatrix &w) {
  TORCH_CHECK(quantizedKernelsServe(in, w), "quantizedLinearAdd: input ", in.sizes(), " ",
              in.scalar_type(), " cannot use the quantized weight [", w.rows(), ", ", w.cols, "]");
  TORCH_CHECK(acc.dim() == 2 && acc.size(0) == in.size(0) && acc.size(1) == w.rows() &&
                  acc.scalar_type() == in.scalar_type() && acc.stride(1) == 1,
              "quantizedLinearAdd: accumulator ", acc.sizes(), " is not [", in.size(0), ", ",
              w.rows(), "] of ", in.scalar_type(), " with unit column stride");
  product(in, w, {}, acc, /*accumulate=*/true);
}

} // namespace nnsc

//===- Linear.cpp - Linear layers that pick GEMV or GEMM --------*- C++ -*-===//

#include "nnsc/Runtime/Layers/Linear.h"

#include "nnsc/Runtime/Kernels/Gemv.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Layers/RowSpans.h"

namespace nnsc {

namespace {

bool rowInvariant() { return productOrder() == ProductOrder::RowInvariant; }

/// Whether the GEMV kernels take `in` @ `weight`^T: up to GemvMaxRows rows, or any number in
/// the row-invariant order (their sums run in one order for every batch tile).
bool useGemv(const torch::Tensor &in, const torch::Tensor &weight) {
  static const bool supported = kernels::gemvSupported();
  const auto type = in.scalar_type();
  return supported && in.dim() == 2 && (in.size(0) <= GemvMaxRows || rowInvariant()) &&
         (type == torch::kFloat32 || type == torch::kBFloat16) && weight.scalar_type() == type &&
         weight.is_contiguous() && in.stride(1) == 1 && in.device().is_cpu() &&
         weight.device().is_cpu();
}

/// `product` of each row of `in` alone, [1, k] -> [1, n], stacked: the row-invariant order
/// where no kernel of ours serves (LibTorch's GEMM picks its kernel by the row count, so only a
/// batch of one row is computed alike in every batch).
template <typename F> torch::Tensor rowByRow(const torch::Tensor &in, const F &product) {
  std::vector<torch::Tensor> rows;
  rows.reserve(size_t(in.size(0)));
  for (int64_t r = 0; r < in.size(0); ++r)
    rows.push_back(product(in.narrow(0, r, 1)));
  return rows.empty() ? product(in) : torch::cat(rows);
}

template <typename T>
void runGemv(const kernels::GemvArgs<T> &a,
             void (*kernel)(const kernels::GemvArgs<T> &, int64_t, int64_t)) {
  forWeightRowParts(a.rows, a.cols, [&](int64_t begin, int64_t end) { kernel(a, begin, end); });
}

/// y (+)= in @ weight^T (+ bias) with the GEMV kernels; y is [rows, n] with unit column stride.
void gemv(const torch::Tensor &in, const torch::Tensor &weight, const torch::Tensor &bias,
          torch::Tensor &y, bool accumulate) {
  const bool bf16 = in.scalar_type() == torch::kBFloat16;
  auto fill = [&](auto &a, auto *type) {
    using T = std::remove_pointer_t<decltype(type)>;
    a.w = static_cast<const T *>(weight.data_ptr());
    a.x = static_cast<const T *>(in.data_ptr());
    a.y = static_cast<T *>(y.data_ptr());
    a.bias = bias.defined() ? static_cast<const T *>(bias.data_ptr()) : nullptr;
    a.rows = weight.size(0);
    a.cols = weight.size(1);
    a.batch = in.size(0);
    a.xStride = in.stride(0);
    a.yStride = y.stride(0);
    a.accumulate = accumulate;
  };
  if (bf16) {
    kernels::GemvArgs<uint16_t> a;
    fill(a, static_cast<uint16_t *>(nullptr));
    static const auto kernel =
        kernels::gemvBF16DotSupported() ? kernels::gemvBF16Dot : kernels::gemvBF16;
    runGemv(a, kernel);
  } else {
    kernels::GemvArgs<float> a;
    fill(a, static_cast<float *>(nullptr));
    runGemv(a, kernels::gemvF32);
  }
}

/// The sum oneDNN wrote to a new tensor as `acc`: rebound where nothing else refers to acc's
/// memory, copied into it otherwise.
void takeSum(torch::Tensor &acc, torch::Tensor sum) {
  if (acc.use_count() == 1 && acc.storage().use_count() == 1 && acc.is_contiguous())
    acc = std::move(sum);
  else
    acc.copy_(sum);
}

/// For a weight known by its blocks only: the input and bias match them, and oneDNN serves
/// the dtype (the model drops its widened copies only then).
void checkBlocksOnly(const char *what, const torch::Tensor &in, const QuantizedMatrix &quant,
                     const torch::Tensor &bias) {
  TORCH_CHECK(quant.defined(), what, ": neither a widened weight nor blocks");
  TORCH_CHECK(in.dim() == 2 && in.size(1) == quant.cols, what, ": input ", in.sizes(),
              " does not match the blocks [", quant.rows(), ", ", quant.cols, "]");
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == quant.rows() &&
                                  bias.scalar_type() == in.scalar_type()),
              what, ": bias ", bias.sizes(), " does not match the blocks [", quant.rows(), ", ",
              quant.cols, "]");
  TORCH_CHECK(oneDnnServes(in.scalar_type()) && in.device().is_cpu(), what,
              ": a weight without its widened copy needs oneDNN for ", in.scalar_type());
}

void checkShapes(const char *what, const torch::Tensor &in, const torch::Tensor &weight,
                 const torch::Tensor &bias) {
  TORCH_CHECK(in.dim() == 2 && weight.dim() == 2 && in.size(1) == weight.size(1), what, ": input ",
              in.sizes(), " does not match weight ", weight.sizes());
  TORCH_CHECK(!bias.defined() ||
                  (bias.dim() == 1 && bias.size(0) == weight.size(0) &&
                   bias.scalar_type() == weight.scalar_type() && bias.is_contiguous()),
              what, ": bias ", bias.sizes(), " does not match weight ", weight.sizes());
}

} // namespace

torch::Tensor linear(const torch::Tensor &in, const torch::Tensor &weight,
                     const torch::Tensor &bias) {
  checkShapes("linear", in, weight, bias);
  if (!useGemv(in, weight)) {
    if (rowInvariant() && in.size(0) > 1)
      return rowByRow(in, [&](const torch::Tensor &row) { return linear(row, weight, bias); });
    if (oneDnnLinearApplies(in, weight))
      return oneDnnLinear(in, weight, bias);
    return bias.defined() ? at::linear(in, weight, bias) : at::linear(in, weight);
  }
  torch::Tensor y = torch::empty({in.size(0), weight.size(0)}, in.options());
  gemv(in, weight, bias, y, /*accumulate=*/false);
  return y;
}

void linearAdd(torch::Tensor &acc, const torch::Tensor &in, const torch::Tensor &weight) {
  checkShapes("linearAdd", in, weight, {});
  TORCH_CHECK(acc.dim() == 2 && acc.size(0) == in.size(0) && acc.size(1) == weight.size(0),
              "linearAdd: accumulator ", acc.sizes(), " is not [", in.size(0), ", ", weight.size(0),
              "]");
  if (useGemv(in, weight) && acc.scalar_type() == in.scalar_type() && acc.stride(1) == 1) {
    gemv(in, weight, {}, acc, /*accumulate=*/true);
    return;
  }
  if (rowInvariant() && in.size(0) > 1) {
    for (int64_t r = 0; r < in.size(0); ++r) {
      torch::Tensor row = acc.narrow(0, r, 1);
      linearAdd(row, in.narrow(0, r, 1), weight);
    }
    return;
  }
  if (oneDnnLinearApplies(in, weight) && acc.scalar_type() == in.scalar_type()) {
    // oneDNN writes acc + product to a new tensor (its sum post-op is not exposed).
    takeSum(acc, oneDnnLinear(in, weight, {}, acc));
    return;
  }
  acc.addmm_(in, weight.t());
}

bool linearRunsOnThreadPool(int64_t rows, torch::ScalarType dtype, bool quantized, bool widened,
                            bool tiled) {
  static const bool gemv = kernels::gemvSupported();
  static const bool quant = kernels::quantIsaSupported(kernels::QuantIsa::Avx2);
  if (dtype != torch::kFloat32 && dtype != torch::kBFloat16)
    return false;
  return (gemv && widened && rows <= GemvMaxRows) ||
         (quant && quantized && rows <= quantDecodeMaxRows(dtype, tiled));
}

/// Whether the quantized kernels take `in` @ `quant`^T now: up to the row limit, or any number
/// of rows in the row-invariant order (their exact form sums in one order for every tile).
bool useQuantized(const torch::Tensor &in, const QuantizedMatrix &quant) {
  return rowInvariant() ? quantizedKernelsServe(in, quant) : quantizedLinearApplies(in, quant);
}

torch::Tensor linear(const torch::Tensor &in, const torch::Tensor &weight,
                     const torch::Tensor &bias, const QuantizedMatrix &quant) {
  if (useQuantized(in, quant)) {
    if (weight.defined()) // quantizedLinear checks the shapes against the blocks
      checkShapes("linear", in, weight, bias);
    if (!bias.defined() || bias.scalar_type() == in.scalar_type())
      return quantizedLinear(in, quant, bias);
  }
  if (!weight.defined()) {
    checkBlocksOnly("linear", in, quant, bias);
    return oneDnnLinearQuantized(in, quant, bias);
  }
  return linear(in, weight, bias);
}

void linearAdd(torch::Tensor &acc, const torch::Tensor &in, const torch::Tensor &weight,
               const QuantizedMatrix &quant) {
  if (useQuantized(in, quant) && acc.dim() == 2 && acc.size(0) == in.size(0) &&
      acc.size(1) == quant.rows() && acc.scalar_type() == in.scalar_type() && acc.stride(1) == 1) {
    if (weight.defined())
      checkShapes("linearAdd", in, weight, {});
    quantizedLinearAdd(acc, in, quant);
    return;
  }
  if (!weight.defined()) {
    checkBlocksOnly("linearAdd", in, quant, {});
    TORCH_CHECK(acc.dim() == 2 && acc.size(0) == in.size(0) && acc.size(1) == quant.rows() &&
                    acc.scalar_type() == in.scalar_type(),
                "linearAdd: accumulator ", acc.sizes(), " is not [", in.size(0), ", ", quant.rows(),
                "] of ", in.scalar_type());
    takeSum(acc, oneDnnLinearQuantized(in, quant, {}, acc));
    return;
  }
  linearAdd(acc, in, weight);
}

torch::Tensor weightRows(const torch::Tensor &weight, int64_t begin, int64_t count) {
  return weight.defined() ? weight.narrow(0, begin, count) : torch::Tensor();
}

} // namespace nnsc

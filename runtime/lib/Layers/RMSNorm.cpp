//===- RMSNorm.cpp - RMSNorm layer ------------------------------*- C++ -*-===//

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include "nnsc/Runtime/Kernels/RMSNorm.h"
#include "nnsc/Runtime/Layers/RowSpans.h"

namespace nnsc {

torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight, double eps) {
  TORCH_CHECK(x.dim() == 2, "rmsNorm: x must be [tokens, hidden], got ", x.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1), "rmsNorm: weight must be [",
              x.size(1), "], got ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type(), "rmsNorm: weight is ", weight.scalar_type(),
              " but x is ", x.scalar_type());
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16,
              "rmsNorm: x must be float32 or bfloat16, got ", x.scalar_type());
  torch::Tensor in = x.contiguous();
  torch::Tensor w = weight.contiguous();
  torch::Tensor out = torch::empty_like(in);
  rmsNormRows(x.scalar_type(), in.data_ptr(), w.data_ptr(), out.data_ptr(), in.size(0), in.size(1),
              eps);
  return out;
}

void rmsNormRows(torch::ScalarType dtype, const void *x, const void *weight, void *out,
                 int64_t rows, int64_t cols, double eps) {
  forRowSpans(rows, cols, [&](int64_t begin, int64_t end) {
    if (dtype == torch::kBFloat16)
      kernels::rmsNormBF16(
          static_cast<const uint16_t *>(x) + begin * cols, static_cast<const uint16_t *>(weight),
          static_cast<uint16_t *>(out) + begin * cols, end - begin, cols, static_cast<float>(eps));
    else
      kernels::rmsNormF32(
          static_cast<const float *>(x) + begin * cols, static_cast<const float *>(weight),
          static_cast<float *>(out) + begin * cols, end - begin, cols, static_cast<float>(eps));
  });
}

} // namespace nnsc

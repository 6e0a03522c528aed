//===- RMSNorm.cpp - RMSNorm layer ------------------------------*- C++ -*-===//

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include "nnsc/Runtime/Kernels/RMSNorm.h"

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
  if (x.scalar_type() == torch::kBFloat16)
    kernels::rmsNormBF16(
        static_cast<const uint16_t *>(in.data_ptr()), static_cast<const uint16_t *>(w.data_ptr()),
        static_cast<uint16_t *>(out.data_ptr()), in.size(0), in.size(1), static_cast<float>(eps));
  else
    kernels::rmsNormF32(in.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(),
                        in.size(0), in.size(1), static_cast<float>(eps));
  return out;
}

} // namespace nnsc

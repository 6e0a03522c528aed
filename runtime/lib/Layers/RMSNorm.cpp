//===- RMSNorm.cpp - RMSNorm layer ------------------------------*- C++ -*-===//

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include "nnsc/Runtime/Kernels/RMSNorm.h"

namespace nnsc {

torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight, double eps) {
  TORCH_CHECK(x.dim() == 2, "rmsNorm: x must be [tokens, hidden], got ", x.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1),
              "rmsNorm: weight must be [", x.size(1), "], got ", weight.sizes());
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
              "rmsNorm: only float32 is supported on CPU so far");
  torch::Tensor in = x.contiguous();
  torch::Tensor w = weight.contiguous();
  torch::Tensor out = torch::empty_like(in);
  kernels::rmsNormF32(in.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(),
                      in.size(0), in.size(1), static_cast<float>(eps));
  return out;
}

} // namespace nnsc

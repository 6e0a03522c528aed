//===- RMSNorm.cpp - RMSNorm layer ------------------------------*- C++ -*-===//

#include "nnsc/Runtime/Layers/RMSNorm.h"

#include "nnsc/Runtime/Kernels/RMSNorm.h"

namespace nnsc {

torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight, double eps) {
  TORCH_CHECK(x.dim() == 2, "rmsNorm: x must be [tokens, hidden], got ", x.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1),
              "rmsNorm: weight must be [", x.size(1), "], got ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type(), "rmsNorm: weight is ",
              weight.scalar_type(), " but x is ", x.scalar_type());
  if (x.scalar_type() == torch::kBFloat16) {
    // transformers' order for half types: normalize in fp32, round, then scale.
    torch::Tensor h = x.to(torch::kFloat32);
    h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * h.to(x.scalar_type());
  }
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "rmsNorm: x must be float32 or bfloat16, got ",
              x.scalar_type());
  torch::Tensor in = x.contiguous();
  torch::Tensor w = weight.contiguous();
  torch::Tensor out = torch::empty_like(in);
  kernels::rmsNormF32(in.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(),
                      in.size(0), in.size(1), static_cast<float>(eps));
  return out;
}

} // namespace nnsc

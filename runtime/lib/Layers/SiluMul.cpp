//===- SiluMul.cpp - The Llama MLP's SiLU(gate) * up ------------*- C++ -*-===//

#include "nnsc/Runtime/Layers/SiluMul.h"

#include "nnsc/Runtime/Kernels/SiluMul.h"
#include "nnsc/Runtime/Layers/RowSpans.h"

namespace nnsc {

namespace {

template <typename T>
void run(const void *gate, int64_t gs, const void *up, int64_t us, void *out, int64_t os,
         int64_t rows, int64_t n, void (*kernel)(const T *, const T *, T *, int64_t)) {
  const T *g = static_cast<const T *>(gate);
  const T *u = static_cast<const T *>(up);
  T *o = static_cast<T *>(out);
  forRowSpans(rows, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      kernel(g + r * gs, u + r * us, o + r * os, n);
  });
}

} // namespace

torch::Tensor siluMul(const torch::Tensor &gate, const torch::Tensor &up) {
  TORCH_CHECK(gate.dim() == 2 && up.sizes() == gate.sizes(), "siluMul: gate ", gate.sizes(),
              " and up ", up.sizes(), " must be the same [rows, n]");
  TORCH_CHECK(gate.scalar_type() == up.scalar_type(), "siluMul: gate is ", gate.scalar_type(),
              " but up is ", up.scalar_type());
  const auto type = gate.scalar_type();
  if (!gate.device().is_cpu() || !up.device().is_cpu() ||
      (type != torch::kFloat32 && type != torch::kBFloat16))
    return at::silu(gate).mul_(up);
  const torch::Tensor g = gate.stride(1) == 1 ? gate : gate.contiguous();
  const torch::Tensor u = up.stride(1) == 1 ? up : up.contiguous();
  torch::Tensor out = torch::empty(gate.sizes(), gate.options());
  siluMulRows(type, g.data_ptr(), g.stride(0), u.data_ptr(), u.stride(0), out.data_ptr(),
              out.stride(0), g.size(0), g.size(1));
  return out;
}

void siluMulRows(torch::ScalarType dtype, const void *gate, int64_t gateStride, const void *up,
                 int64_t upStride, void *out, int64_t outStride, int64_t rows, int64_t n) {
  if (dtype == torch::kBFloat16)
    run<uint16_t>(gate, gateStride, up, upStride, out, outStride, rows, n, kernels::siluMulBF16);
  else
    run<float>(gate, gateStride, up, upStride, out, outStride, rows, n, kernels::siluMulF32);
}

} // namespace nnsc

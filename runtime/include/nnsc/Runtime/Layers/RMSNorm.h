//===- RMSNorm.h - RMSNorm layer --------------------------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_LAYERS_RMSNORM_H
#define NNSC_RUNTIME_LAYERS_RMSNORM_H

#include <torch/torch.h>

namespace nnsc {

/// Llama RMSNorm over the last dimension.
/// x: [tokens, hidden], weight: [hidden], both float32 or both bfloat16 -> [tokens, hidden].
torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight, double eps);

/// The same on raw contiguous rows of `dtype` (float32 or bfloat16): out[rows, cols] from
/// x[rows, cols] and weight[cols], for callers that checked the shapes (the kernel call behind
/// rmsNorm).
void rmsNormRows(torch::ScalarType dtype, const void *x, const void *weight, void *out,
                 int64_t rows, int64_t cols, double eps);

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_RMSNORM_H

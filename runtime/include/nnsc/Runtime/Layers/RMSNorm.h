//===- RMSNorm.h - RMSNorm layer --------------------------------*- C++ -*-===//

#ifndef NNSC_RUNTIME_LAYERS_RMSNORM_H
#define NNSC_RUNTIME_LAYERS_RMSNORM_H

#include <torch/torch.h>

namespace nnsc {

/// Llama RMSNorm over the last dimension.
/// x: [tokens, hidden], weight: [hidden], both float32 or both bfloat16 -> [tokens, hidden].
torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight, double eps);

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_RMSNORM_H

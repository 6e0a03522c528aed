//===- SafetensorsWriter.h - write tensors as safetensors -------*- C++ -*-===//

#ifndef NNSC_RUNTIME_MODELS_SAFETENSORSWRITER_H
#define NNSC_RUNTIME_MODELS_SAFETENSORSWRITER_H

#include <torch/torch.h>

#include <map>
#include <string>

namespace nnsc {

/// Writes tensors (float32, bfloat16, float16, int64, int32, bool) to `path` in the
/// safetensors format, readable by Python's `safetensors`. Throws std::runtime_error on
/// failure.
void writeSafetensors(const std::string &path, const std::map<std::string, torch::Tensor> &tensors);

/// The same file's bytes, in memory (a server's response body).
std::string serializeSafetensors(const std::map<std::string, torch::Tensor> &tensors);

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_SAFETENSORSWRITER_H

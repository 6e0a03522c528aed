//===- SafetensorsWeights.h - weights from a Hugging Face dir ---*- C++ -*-===//
//
// A Hugging Face model directory: config.json plus model.safetensors, or shards listed in
// model.safetensors.index.json. Tensors of dtype F32, F16 and BF16 are accepted.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_SAFETENSORSWEIGHTS_H
#define NNSC_RUNTIME_MODELS_SAFETENSORSWEIGHTS_H

#include "nnsc/Runtime/Models/ModelWeights.h"
#include "nnsc/Runtime/Models/SafetensorsFile.h"

#include <memory>

namespace nnsc {

/// A WeightSource over the safetensors files of a model directory.
class SafetensorsWeightSource : public WeightSource {
public:
  /// Opens the directory's safetensors files; throws ModelLoadError.
  explicit SafetensorsWeightSource(const std::string &dir);
  torch::Tensor get(const std::string &hfName, const std::vector<int64_t> &shape,
                    torch::ScalarType dtype, bool optional) override;
  int64_t size() const override;

private:
  std::string dir;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_SAFETENSORSWEIGHTS_H

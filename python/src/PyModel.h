//===- PyModel.h - a loaded model for Python --------------------*- C++ -*-===//
//
// `_nnsc.Model`: the weights on a backend, the tokenizer and the end-of-sequence tokens, loaded
// once with the runtime's loadModel (as nns-run and nns-serve do) and shared by the Python
// LLM's engine and programs.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PYTHON_PYMODEL_H
#define NNSC_PYTHON_PYMODEL_H

#include "nnsc/Runtime/Backend/ModelLoader.h"

#include <nanobind/nanobind.h>

#include <memory>
#include <string>

namespace nnsc::python {

struct PyModel {
  /// Loads `path` with weights widened to `dtype` ("fp32" or "bf16") on `device`; throws
  /// std::runtime_error (ModelLoadError and friends) naming the file and what is wrong.
  PyModel(const std::string &path, const std::string &dtype, const std::string &device,
          const std::string &weights);

  /// The tokenizer; throws std::runtime_error when the model ships none.
  const tokenizer::Tokenizer &tokenizer() const;

  std::string path;
  LoadedModel loaded;
};

void bindModel(nanobind::module_ &m);

} // namespace nnsc::python

#endif // NNSC_PYTHON_PYMODEL_H

//===- PyProgram.h - a bundle loaded for a model ----------------*- C++ -*-===//
//
// `_nnsc.Bundle`: a `.nnsb` loaded and checked against one loaded model (session::Program,
// as nns-run and nns-serve load theirs), its traces described for Python.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PYTHON_PYPROGRAM_H
#define NNSC_PYTHON_PYPROGRAM_H

#include "PyModel.h"

#include "nnsc/Session/Program.h"

#include <nanobind/nanobind.h>

#include <memory>
#include <string>

namespace nnsc::python {

struct PyBundle {
  /// Loads `path` for `model`; throws InvalidInput with the loader's message.
  PyBundle(const PyModel &model, const std::string &path);

  std::string path;
  std::shared_ptr<const session::Program> program;
};

void bindProgram(nanobind::module_ &m);

} // namespace nnsc::python

#endif // NNSC_PYTHON_PYPROGRAM_H

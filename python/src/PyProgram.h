//===- PyProgram.h - a bundle loaded for a model ----------------*- C++ -*-===//
//
// `_nnsc.Bundle`: a `.nnsb` loaded and checked against one loaded model (loadBundle, the same
// checks as nns-run --bundle), its traces described for Python, and one BundleHook per trace
// shared by every request that binds it (as nns-serve's ProgramRegistry does).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PYTHON_PYPROGRAM_H
#define NNSC_PYTHON_PYPROGRAM_H

#include "PyModel.h"

#include "nnsc/Runtime/Bundle/Bundle.h"
#include "nnsc/Runtime/Bundle/BundleHook.h"

#include <nanobind/nanobind.h>

#include <map>
#include <memory>
#include <string>

namespace nnsc::python {

struct PyBundle {
  /// Loads `path` for `model`; throws InvalidInput with the loader's message.
  PyBundle(const PyModel &model, const std::string &path);

  /// The trace named `name`, or the only one when `name` is empty; throws
  /// InvalidInput naming the traces there are.
  const BundleTrace &trace(const std::string &name) const;
  /// The hook of `trace` (one of ours), made on first use.
  std::shared_ptr<BundleHook> hook(const BundleTrace &trace);

  std::string path;
  std::shared_ptr<const CausalLM> model;
  std::shared_ptr<Bundle> bundle;
  std::map<const BundleTrace *, std::shared_ptr<BundleHook>> hooks;
};

void bindProgram(nanobind::module_ &m);

} // namespace nnsc::python

#endif // NNSC_PYTHON_PYPROGRAM_H

//===- PyProgram.cpp - a bundle loaded for a model --------------*- C++ -*-===//

#include "PyProgram.h"

#include "nnsc/Runtime/Bundle/BundleLoader.h"
#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Support/Error.h"

#include <nanobind/stl/string.h>

#include <stdexcept>

namespace nb = nanobind;

namespace nnsc::python {

PyBundle::PyBundle(const PyModel &m, const std::string &path) : path(path), model(m.loaded.model) {
  if (!model || !m.loaded.backend->capabilities().bundleKernels)
    throw nnsc::InvalidInput("programs run on the CPU backend only; load the LLM with "
                             "device='cpu'");
  std::string error;
  std::unique_ptr<Bundle> loaded = loadBundle(path, model->architecture(), error);
  if (!loaded)
    throw nnsc::InvalidInput("'" + path + "': " + error);
  bundle = std::move(loaded);
}

const BundleTrace &PyBundle::trace(const std::string &name) const {
  if (const BundleTrace *t = bundle->findTrace(name))
    return *t;
  if (name.empty() && bundle->traces().size() == 1)
    return bundle->traces().front();
  std::string names;
  for (const BundleTrace &t : bundle->traces())
    names += (names.empty() ? "'" : ", '") + t.name + "'";
  throw nnsc::InvalidInput(
      name.empty() ? "the program has several traces (" + names + "); choose one with trace=NAME"
                   : "the program has no trace '" + name + "' (its traces: " + names + ")");
}

std::shared_ptr<BundleHook> PyBundle::hook(const BundleTrace &trace) {
  std::shared_ptr<BundleHook> &h = hooks[&trace];
  if (!h)
    h = std::make_shared<BundleHook>(bundle, trace, model);
  return h;
}

namespace {

nb::list shapeList(const std::vector<int64_t> &shape) {
  nb::list l;
  for (int64_t d : shape)
    l.append(d == NNSC_DIM_TOKENS ? nb::cast("T") : nb::cast(d));
  return l;
}

/// {name, invokes, invoke_names, params: [{name, type, required}], saves: [{name, type,
/// per_step}]} of every trace.
nb::list describeTraces(const PyBundle &b) {
  nb::list traces;
  for (const BundleTrace &t : b.bundle->traces()) {
    nb::dict d;
    d["name"] = t.name;
    d["invokes"] = std::max(t.numInvokes, 1);
    nb::list invokeNames;
    for (const std::string &n : t.invokeNames)
      invokeNames.append(n);
    d["invoke_names"] = invokeNames;
    nb::list params, saves;
    for (const BundleParam &p : t.params) {
      nb::dict pd;
      pd["name"] = p.name;
      pd["type"] = describeType(p.dtype, p.shape);
      pd["dtype"] = dtypeName(p.dtype);
      pd["shape"] = shapeList(p.shape);
      pd["required"] = p.defaultValue == nullptr;
      params.append(pd);
    }
    for (const BundleSave &s : t.saves) {
      nb::dict sd;
      sd["name"] = s.name;
      sd["type"] = describeType(s.dtype, s.shape);
      sd["per_step"] = s.perStep;
      saves.append(sd);
    }
    d["params"] = params;
    d["saves"] = saves;
    traces.append(d);
  }
  return traces;
}

} // namespace

void bindProgram(nb::module_ &m) {
  nb::class_<PyBundle>(m, "Bundle")
      .def(nb::init<const PyModel &, const std::string &>(), nb::arg("model"), nb::arg("path"))
      .def_ro("path", &PyBundle::path)
      .def("traces", &describeTraces);
}

} // namespace nnsc::python

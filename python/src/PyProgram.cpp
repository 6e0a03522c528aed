//===- PyProgram.cpp - a bundle loaded for a model --------------*- C++ -*-===//

#include "PyProgram.h"

#include "nnsc/Runtime/Support/Error.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace nnsc::python {

PyBundle::PyBundle(const PyModel &m, const std::string &path) : path(path) {
  std::string error;
  program = session::Program::load(path, *m.loaded.backend, error);
  if (!program)
    throw nnsc::InvalidInput(error);
}

namespace {

nb::list shapeList(const std::vector<int64_t> &shape) {
  nb::list l;
  for (int64_t d : shape)
    l.append(d == NNSC_DIM_TOKENS ? nb::cast("T") : nb::cast(d));
  return l;
}

/// {name, invokes, invoke_names, params: [{name, type, dtype, shape, required}], saves: [{name,
/// type, per_step}]} of `t`.
nb::dict describeTrace(const BundleTrace &t) {
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
  return d;
}

} // namespace

void bindProgram(nb::module_ &m) {
  nb::class_<PyBundle>(m, "Bundle")
      .def(nb::init<const PyModel &, const std::string &>(), nb::arg("model"), nb::arg("path"))
      .def_ro("path", &PyBundle::path)
      .def("traces",
           [](const PyBundle &b) {
             nb::list traces;
             for (const BundleTrace &t : b.program->bundle().traces())
               traces.append(describeTrace(t));
             return traces;
           })
      .def(
          "trace",
          [](const PyBundle &b, const std::string &name) {
            std::string error;
            const BundleTrace *t = b.program->findTrace(name, "choose one with trace=NAME", error);
            if (!t)
              throw nnsc::InvalidInput(error);
            return describeTrace(*t);
          },
          nb::arg("name"),
          "The trace `name` (\"\": the only one) described as traces() does; ValueError naming "
          "the traces there are when there is no such trace.");
}

} // namespace nnsc::python

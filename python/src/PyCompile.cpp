//===- PyCompile.cpp - the in-process compiler for Python -------*- C++ -*-===//

#include "PyCompile.h"
#include "PyModel.h"

#include "nnsc/Driver/CompileSource.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace nnsc::python {

void bindCompile(nb::module_ &m) {
  m.def(
      "compile_source",
      [](const PyModel &model, const std::string &source, const std::string &bufferName,
         const std::string &output) {
        nb::gil_scoped_release release;
        driver::SourceCompileResult r = driver::compileSource(
            source, bufferName, model.loaded.backend->architecture(), {}, output);
        return std::make_pair(r.ok, r.diagnostics);
      },
      nb::arg("model"), nb::arg("source"), nb::arg("buffer_name"), nb::arg("output"),
      "Compiles `source` for `model` into the bundle file `output`; returns (ok, diagnostics).");
}

} // namespace nnsc::python

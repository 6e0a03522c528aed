//===- Module.cpp - the nnsc._nnsc extension module -------------*- C++ -*-===//
//
// The C++ half of the Python package: a model, the in-process compiler, bundles and the engine.
// The Python half (python/nnsc) builds the public API (LLM, Program, Result, Client) on it.
//
//===----------------------------------------------------------------------===//

#include "PyCompile.h"
#include "PyEngine.h"
#include "PyModel.h"
#include "PyProgram.h"

#include "nnsc/Runtime/Support/Error.h"

#include <Python.h>

NB_MODULE(_nnsc, m) {
  m.doc() = "nnsc's engine and compiler (use the nnsc package, not this module)";
  // An LLM kept in a module global is still alive when the interpreter exits; nanobind would
  // report it as leaked.
  nanobind::set_leak_warnings(false);
  // The runtime's errors (nnsc/Runtime/Support/Error.h): bad input is a ValueError; the rest
  // of nnsc::Error derives from std::runtime_error, which nanobind raises as RuntimeError.
  nanobind::register_exception_translator([](const std::exception_ptr &thrown, void *) {
    try {
      std::rethrow_exception(thrown);
    } catch (const nnsc::InvalidInput &e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  nnsc::python::bindModel(m);
  nnsc::python::bindCompile(m);
  nnsc::python::bindProgram(m);
  nnsc::python::bindEngine(m);
}

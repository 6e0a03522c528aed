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

NB_MODULE(_nnsc, m) {
  m.doc() = "nnsc's engine and compiler (use the nnsc package, not this module)";
  nnsc::python::bindModel(m);
  nnsc::python::bindCompile(m);
  nnsc::python::bindProgram(m);
  nnsc::python::bindEngine(m);
}

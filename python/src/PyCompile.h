//===- PyCompile.h - the in-process compiler for Python ---------*- C++ -*-===//
//
// `_nnsc.compile_source`: .nns source to a bundle file for a loaded model, through
// nnsc/Driver/CompileSource.h (plain C++: this file never sees an MLIR header, the compiler
// library never sees a torch one).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_PYTHON_PYCOMPILE_H
#define NNSC_PYTHON_PYCOMPILE_H

#include <nanobind/nanobind.h>

namespace nnsc::python {

void bindCompile(nanobind::module_ &m);

} // namespace nnsc::python

#endif // NNSC_PYTHON_PYCOMPILE_H

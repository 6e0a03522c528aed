//===- MLIRGen.h - nns IR from a checked AST --------------------*- C++ -*-===//

#ifndef NNSC_FRONTEND_MLIRGEN_H
#define NNSC_FRONTEND_MLIRGEN_H

#include "nnsc/Frontend/AST.h"
#include "nnsc/Schema/Architecture.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace nnsc {

/// Builds the nns module of a program that checkProgram accepted (it relies on Sema's
/// annotations): one `nns.param` per param, one `nns.trace` per trace (`@main` when unnamed).
/// The caller verifies the result.
mlir::OwningOpRef<mlir::ModuleOp>
mlirGen(const ast::Program &program, const schema::Architecture &arch, mlir::MLIRContext &context);

} // namespace nnsc

#endif // NNSC_FRONTEND_MLIRGEN_H

//===- Pipeline.h - the stages from source to kernel-level IR ---*- C++ -*-===//
//
// The stages every front door of the compiler runs in the same order (the nnsc driver, and
// compileSource for embedders): parse -> check against the model -> nns IR -> scheduled
// per-site kernels -> kernel-level IR. The back end (nnsc/Target/Bundle/BundleEmitter.h)
// takes it from there. Diagnostics go through the context's handler.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DRIVER_PIPELINE_H
#define NNSC_DRIVER_PIPELINE_H

#include "nnsc/Frontend/AST.h"
#include "nnsc/Frontend/Sema.h"
#include "nnsc/Schema/Architecture.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace nnsc::driver {

/// Checks a parsed `program` against `arch` and generates verified nns IR; null after
/// reporting errors. `saves`, when given, receives what each trace returns.
mlir::OwningOpRef<mlir::ModuleOp> generateCheckedIR(ast::Program &program,
                                                    const schema::Architecture &arch,
                                                    mlir::MLIRContext &context,
                                                    std::vector<SaveInfo> *saves = nullptr);

/// Annotates `module` with its target (`source` is hashed into the manifest) and runs the
/// scheduling passes; with `lowerToKernels`, also nns-lower-to-kernels, leaving kernel-level
/// IR ready for the back end.
mlir::LogicalResult scheduleModule(mlir::ModuleOp module, const schema::Architecture &arch,
                                   llvm::StringRef source, bool lowerToKernels);

} // namespace nnsc::driver

#endif // NNSC_DRIVER_PIPELINE_H

//===- Passes.td - conversions of the compiler -------------*- tablegen -*-===//

#ifndef NNSC_CONVERSION_PASSES_TD
#define NNSC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def NNSLowerToKernels : Pass<"nns-lower-to-kernels", "mlir::ModuleOp"> {
  let summary = "Lower scheduled nns IR to kernel-level IR with the bundle manifest";
  let description = [{
    Turns every `nns.kernel` (from `nns-fuse-sites`) into a func.func of the bundle ABI's
    kernel signature: a loop over the groups bound in the batch per run of ops with one step
    guard and invoke, the site's rows and params viewed as strided memrefs, the tensor math as
    scf loops over memrefs, frame slots, saves, module calls, stop and finish through the
    runtime callbacks. Index and shape checks report an error for one request and never access
    memory outside the buffers. Builds the module attribute `nns.manifest` from `nns.traces`,
    the `nns.param` ops and `nns.target` (arch, schema hash, dimensions, source hash, module
    indices; see nnsc::kernels::annotateTarget). A dialect conversion does it (patterns for
    `nns.kernel` and `nns.param`, every nns op illegal), so an op no pattern lowers, such as
    an `nns.trace` the scheduling passes did not fuse, is reported as not legalized. The
    result has upstream dialects only.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
    "mlir::math::MathDialect", "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect"
  ];
}

#endif // NNSC_CONVERSION_PASSES_TD

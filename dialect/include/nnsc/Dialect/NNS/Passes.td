//===- Passes.td - scheduling passes of the nns dialect ----*- tablegen -*-===//
//
// The passes that turn a verified trace program into a static schedule of per-site kernels
// (docs/Compiler.md, "Scheduling"). They run in this order; each one's output is the next
// one's input, and `nnsc -emit=scheduled` prints the result of the last.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_PASSES_TD
#define NNSC_DIALECT_NNS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NNSAssignSites : Pass<"nns-assign-sites", "mlir::ModuleOp"> {
  let summary = "Assign every op of a trace to the earliest site event where its inputs exist";
  let description = [{
    Sets `nns.at` (a site's firing order) on every op inside `nns.trace`: a site op at its own
    site, any other op at the latest site among its operands, side effects that read nothing
    from the model (a constant write) at their site, `finish` and a `stop` outside any invoke
    at the last site event of their trace, a `stop` in an invoke at that invoke's last site
    event (it ends that invoke's prompt only). Ops that depend on no site (constants, params,
    the step index) get -1: they are recomputed wherever they are used. A data-dependent `nns.if` gets the latest site of
    its condition and body. A use of a value before the site event that produces it is an
    error naming both.
  }];
  let dependentDialects = ["nnsc::nns::NNSDialect"];
}

def NNSStepGuards : Pass<"nns-step-guards", "mlir::ModuleOp"> {
  let summary = "Turn generation loops into step guards";
  let description = [{
    Inlines every `nns.steps` body into its parent, marking each of its ops with
    `nns.guard = array<i64: start, stop, stride>` (stop -1: open ended) and replacing the loop
    variable with `nns.step`; ops outside any loop get the prefill guard `[0, 1, 1]`.
  }];
  let dependentDialects = ["nnsc::nns::NNSDialect"];
}

def NNSOrderInvokes : Pass<"nns-order-invokes", "mlir::ModuleOp"> {
  let summary = "Order cross-invoke values within one forward pass";
  let description = [{
    Inlines every `nns.invoke` body into the trace, marking its ops with `nns.invoke = index`
    and replacing the invoke's results by the values it yields. A value one invoke passes to a
    later one must exist at or before the site event that uses it in the same forward pass
    (the kernel of a site runs invoke 0's groups first): otherwise it is an error naming both.
  }];
  let dependentDialects = ["nnsc::nns::NNSDialect"];
}

def NNSAllocateFrame : Pass<"nns-allocate-frame", "mlir::ModuleOp"> {
  let summary = "Keep values that cross site events in a per-request frame";
  let description = [{
    A value used at another site event, under another step guard, by another invoke, or in
    another run of its site's kernel (an op of another guard or invoke comes between: each
    run is its own loop over the groups) than the one that computes it gets a frame slot:
    `nns.frame = array<i64: offset, ...>` on its defining op (-1 for results that need
    none), and on the trace `nns.frame_bytes` and `nns.frame_heap` (the offsets of the heap
    pointers, which the runtime frees at request end). A slot starts with the 8-byte step
    stamp; a static shape follows inline (8-byte aligned); a shape with a dynamic dimension
    (T, an attention pattern's S) as a pointer to a heap copy and each dynamic size.
  }];
  let dependentDialects = ["nnsc::nns::NNSDialect"];
}

def NNSFuseSites : Pass<"nns-fuse-sites", "mlir::ModuleOp"> {
  let summary = "Fuse all the work of a trace at a site into one kernel";
  let description = [{
    Replaces every `nns.trace` by one `nns.kernel` per site event it uses, holding the ops
    assigned to it in program order (with the `nns.if` ops around them, recomputed constants
    and params; top-level caches last, after every write of their site), reading earlier
    values with `nns.frame.load` (one per run) and keeping later-needed ones with
    `nns.frame.store`. The trace's manifest facts (frame size, invokes, flags) move to
    `nns.traces` on the module.
  }];
  let dependentDialects = ["nnsc::nns::NNSDialect"];
}

#endif // NNSC_DIALECT_NNS_PASSES_TD

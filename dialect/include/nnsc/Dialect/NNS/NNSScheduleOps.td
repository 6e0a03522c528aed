//===- NNSScheduleOps.td - ops of scheduled nns IR ---------*- tablegen -*-===//
//
// Ops that only the scheduling passes create (docs/Compiler.md, "Scheduling"): the current
// step index once `nns.steps` loops are guards, per-request frame slots for values that cross
// site events, and one `nns.kernel` per (trace, site) holding all the work done at that site.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSSCHEDULEOPS_TD
#define NNSC_DIALECT_NNS_NNSSCHEDULEOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSAttrs.td"
include "nnsc/Dialect/NNS/NNSTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NNS_StepOp : NNS_Op<"step", [Pure]> {
  let summary = "The current generation step index (0 = prefill)";
  let description = [{
    Replaces the block argument of an `nns.steps` loop once `nns-step-guards` has turned the
    loop into guards on its ops.

    ```mlir
    %s = nns.step : tensor<i64>
    ```
  }];
  let results = (outs NNS_IndexScalar:$value);
  let assemblyFormat = "attr-dict `:` type($value)";
}

def NNS_FrameLoadOp : NNS_Op<"frame.load", [MemoryEffects<[MemRead]>]> {
  let summary = "Read a value that an earlier site event stored in the request's frame";
  let description = [{
    `offset` is a byte offset into the per-request frame. A static-shaped value is stored
    inline; a value with the token dimension `?` is stored as a pointer and a row count.

    ```mlir
    %h = nns.frame.load 16 : tensor<576xf32>
    ```
  }];
  let arguments = (ins I64Attr:$offset);
  let results = (outs NNS_Tensor:$value);
  let assemblyFormat = "$offset attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NNS_FrameStoreOp : NNS_Op<"frame.store", [MemoryEffects<[MemWrite]>]> {
  let summary = "Keep a value in the request's frame for a later site event";
  let description = [{
    ```mlir
    nns.frame.store %h, 16 : tensor<576xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$value, I64Attr:$offset);
  let assemblyFormat = "$value `,` $offset attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NNS_SiteAccessList : TypedArrayAttrBase<NNS_SiteAccessAttr,
                                             "list of site accesses (read, write, skip)">;

def NNS_KernelOp : NNS_Op<"kernel", [Symbol, NoTerminator, SingleBlock]> {
  let summary = "All the work of one trace at one site event, fused";
  let description = [{
    Created by `nns-fuse-sites`. Its ops run once per group of the trace bound in the batch, in
    program order; ops of an invoke carry `nns.invoke` and run only for that invoke's groups,
    invoke by invoke. `access` is what the kernel does to the site's value: a non-empty set
    of `read`, `write` and `skip` (the `SiteAccess` enum the manifest's site entries carry).

    ```mlir
    nns.kernel @main_235 trace @main site 235 "model.layers.8.output" forward access [read] {
      %h = nns.site.read "model.layers.8.output" at 235 forward : tensor<?x576xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$trace, I64Attr:$site,
                       StrAttr:$path, NNS_PhaseAttr:$phase, NNS_SiteAccessList:$access);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `trace` $trace `site` $site $path $phase `access` custom<SiteAccessList>($access)
    attr-dict-with-keyword $body
  }];
  let extraClassDeclaration = [{
    /// The access set as enum values, in the order listed.
    ::llvm::SmallVector<::nnsc::nns::SiteAccess> getAccessFlags();
  }];
  let hasVerifier = 1;
}

#endif // NNSC_DIALECT_NNS_NNSSCHEDULEOPS_TD

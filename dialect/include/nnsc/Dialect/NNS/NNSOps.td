//===- NNSOps.td - nns dialect operations ------------------*- tablegen -*-===//

#ifndef NNSC_DIALECT_NNS_NNSOPS_TD
#define NNSC_DIALECT_NNS_NNSOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NNS_TraceOp : NNS_Op<"trace", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock]> {
  let summary = "An entry point of a bundle: one trace over one model run";
  let description = [{
    A trace is the body of a `trace NAME { ... }` block. Its region runs, conceptually, as the
    model executes: each `nns.site.read` waits for the model to reach that site. Requests select
    a trace by its symbol name.

    ```mlir
    nns.trace @capture {
      %h = nns.site.read "model.layers.8.output" : tensor<?x576xf32>
      nns.save "h", %h : tensor<?x576xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
}

def NNS_SiteReadOp : NNS_Op<"site.read"> {
  let summary = "Read the value of a site when the model reaches it";
  let description = [{
    Yields the tensor the model holds at `site`, a dotted Hugging Face module path followed by
    an accessor (`output` or `input`), or one of the special sites `logits`, `samples`, `result`.

    ```mlir
    %h = nns.site.read "model.layers.3.mlp.output" : tensor<?x576xf32>
    ```
  }];
  let arguments = (ins StrAttr:$site);
  let results = (outs AnyRankedTensor:$value);
  let assemblyFormat = "$site attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NNS_SaveOp : NNS_Op<"save"> {
  let summary = "Return a value with the request under a name";
  let description = [{
    Copies `value` into the request's results under `name`; the runtime writes it to the
    request's safetensors file.

    ```mlir
    nns.save "h", %h : tensor<576xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, AnyRankedTensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

#endif // NNSC_DIALECT_NNS_NNSOPS_TD

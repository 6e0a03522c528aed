//===- NNSStructureOps.td - trace structure ops ------------*- tablegen -*-===//
//
// The structure of a trace program: params, traces, invokes, generation steps and
// conditionals, and the terminator of their regions.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSSTRUCTUREOPS_TD
#define NNSC_DIALECT_NNS_NNSSTRUCTUREOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NNS_ParamOp : NNS_Op<"param", [Symbol]> {
  let summary = "A per-request argument of the bundle";
  let description = [{
    Declares a parameter bound when a request is made, at module level so every trace of the
    bundle can use it. `param_type` is a ranked tensor type with static dimensions (scalars are
    0-d tensors); `default_value`, when present, is used if the request does not bind it.

    ```mlir
    nns.param @alpha : tensor<f32> = dense<4.000000e+00> : tensor<f32>
    nns.param @steer : tensor<576xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<NNS_Tensor>:$param_type,
                       OptionalAttr<ElementsAttr>:$default_value);
  let assemblyFormat = "$sym_name `:` $param_type (`=` $default_value^)? attr-dict";
  let hasVerifier = 1;
}

def NNS_GetParamOp : NNS_Op<"get_param", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The value of a param for the current request";
  let description = [{
    Yields the value bound to the module-level `nns.param` named by `param`.

    ```mlir
    %a = nns.get_param @alpha : tensor<f32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs NNS_Tensor:$value);
  let assemblyFormat = "$param attr-dict `:` type($value)";
}

def NNS_TraceOp : NNS_Op<"trace", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock]> {
  let summary = "An entry point of a bundle: one trace over one model run";
  let description = [{
    A trace is the body of a `trace NAME { ... }` block (an unnamed trace is `@main`). Its
    region runs, conceptually, as the model executes: each site op waits for the model to reach
    its site. Ops outside any `nns.steps` belong to step 0 (the prompt pass); ops inside one run
    at each step it selects. Requests select a trace by its symbol name.

    ```mlir
    nns.trace @capture {
      %h = nns.site.read "model.layers.8.output" at 245 forward : tensor<?x576xf32>
      nns.save "h", %h : tensor<?x576xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
}

def NNS_YieldOp : NNS_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["InvokeOp", "IfOp", "StepsOp"]>]> {
  let summary = "Ends an invoke, conditional or steps body, passing values out";
  let description = [{
    The values become the results of the parent `nns.invoke` (values later invokes use) or
    `nns.if` (names rebound in a branch). A `nns.steps` body yields nothing; the terminator
    may be omitted when it has no operands.

    ```mlir
    nns.yield %h : tensor<576xf32>
    ```
  }];
  let arguments = (ins Variadic<NNS_Tensor>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def NNS_InvokeOp : NNS_Op<"invoke", [
    SingleBlockImplicitTerminator<"YieldOp">, HasParent<"TraceOp">]> {
  let summary = "The part of a trace that applies to one prompt of the request";
  let description = [{
    A trace with invokes takes one prompt per invoke, in `index` order; all prompts run in the
    same forward passes. Site ops inside apply to this invoke's prompt. Values that later
    invokes use leave through `nns.yield` and are the results; at one site, invokes run in
    index order, so a value computed at a site may be used by a later invoke at that site or a
    later one.

    ```mlir
    %h = nns.invoke "clean" index 0 {
      %x = nns.site.read "model.layers.6.output" at 190 forward : tensor<?x576xf32>
      nns.yield %x : tensor<?x576xf32>
    } : tensor<?x576xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$index);
  let results = (outs Variadic<NNS_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$name `index` $index attr-dict-with-keyword $body (`:` type($results)^)?";
  let hasVerifier = 1;
}

def NNS_StepsOp : NNS_Op<"steps", [
    SingleBlockImplicitTerminator<"YieldOp">, ParentOneOf<["TraceOp", "InvokeOp"]>]> {
  let summary = "A generation loop: the body runs at every selected step";
  let description = [{
    `for step in steps[start:stop:stride] { ... }`. Step 0 is the prompt pass, step k the k-th
    generation step; without `stop` the body runs until the request ends. The body's block
    argument is the current step index. Values defined in the body are per step and do not
    leave it; a later pass turns the loop into a guard on the step index.

    ```mlir
    nns.steps from 0 to 5 by 1 {
    ^bb0(%step: tensor<i64>):
      %l = nns.site.read "logits" at 274 logits : tensor<49152xf32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$start, OptionalAttr<I64Attr>:$stop, I64Attr:$stride);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "`from` $start (`to` $stop^)? `by` $stride attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def NNS_IfOp : NNS_Op<"if", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A conditional on a scalar boolean computed at run time";
  let description = [{
    Runs `thenRegion` when `condition` is true, else `elseRegion` (which may be empty when
    there are no results). The condition may depend on sites (decided on device, per request)
    or on the step index. Names a branch rebinds are the results, yielded by both branches.
    Conditions known at compile time never reach the IR.

    ```mlir
    %y = nns.if %c : tensor<i1> {
      nns.yield %a : tensor<f32>
    } else {
      nns.yield %b : tensor<f32>
    } -> tensor<f32>
    ```
  }];
  let arguments = (ins NNS_BoolScalar:$condition);
  let results = (outs Variadic<NNS_Tensor>:$results);
  let regions = (region SizedRegion<1>:$thenRegion, MaxSizedRegion<1>:$elseRegion);
  let assemblyFormat = [{
    $condition `:` type($condition) $thenRegion (`else` $elseRegion^)? attr-dict
    (`->` type($results)^)?
  }];
  let hasVerifier = 1;
}

#endif // NNSC_DIALECT_NNS_NNSSTRUCTUREOPS_TD

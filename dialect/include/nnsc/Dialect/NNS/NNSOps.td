//===- NNSOps.td - nns dialect operations ------------------*- tablegen -*-===//
//
// The op set of a trace program. Values are tensors in value semantics (scalars are 0-d
// tensors); the token dimension T of a site is `?`. Ops that touch the model carry the
// resolved site as attributes (canonical path, firing order, phase) so that scheduling needs
// no architecture lookup. See docs/Dialect.md for the design.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSOPS_TD
#define NNSC_DIALECT_NNS_NNSOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSAttrs.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NNS_Tensor : RankedTensorOf<[F32, I64, I1]>;
def NNS_IndexScalar : 0DTensorOf<[I64]>;
def NNS_BoolScalar : 0DTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Structure: traces, params, invokes, generation steps, conditionals
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Sites
//===----------------------------------------------------------------------===//

class NNS_SiteOp<string mnemonic, list<Trait> traits = []> : NNS_Op<mnemonic, traits> {
  // Every op that touches a site names it by canonical path, firing order and phase.
  dag siteArgs = (ins StrAttr:$path, I64Attr:$order, NNS_PhaseAttr:$phase);
}

def NNS_SiteReadOp : NNS_SiteOp<"site.read"> {
  let summary = "Read the value of a site when the model reaches it";
  let description = [{
    Yields the tensor the model holds at the site `path`: a dotted Hugging Face module path
    with an accessor (`output` or `input`), or one of `logits`, `samples`, `result`. `order` is
    the site's position in the model's firing order and `phase` when it fires; both come from
    the architecture schema.

    ```mlir
    %h = nns.site.read "model.layers.3.mlp.output" at 112 forward : tensor<?x576xf32>
    ```
  }];
  let arguments = siteArgs;
  let results = (outs NNS_Tensor:$value);
  let assemblyFormat = "$path `at` $order $phase attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NNS_SiteWriteOp : NNS_SiteOp<"site.write"> {
  let summary = "Replace the value the model continues with at a site";
  let description = [{
    The model continues with `value`, broadcast to `site_type`, instead of the site's value.
    Partial writes (`SITE[i] = v`) are a read, a scatter and a whole write.

    ```mlir
    nns.site.write %z to "model.layers.3.mlp.output" at 112 forward
        : tensor<f32> into tensor<?x576xf32>
    ```
  }];
  let arguments = !con((ins NNS_Tensor:$value), siteArgs,
                       (ins TypeAttrOf<NNS_Tensor>:$site_type));
  let assemblyFormat = [{
    $value `to` $path `at` $order $phase attr-dict `:` type($value) `into` $site_type
  }];
  let hasVerifier = 1;
}

def NNS_SiteUpdateOp : NNS_SiteOp<"site.update"> {
  let summary = "Combine a value into a site in place (`SITE += v` and friends)";
  let description = [{
    The site's value becomes `site <kind> value`, with `value` broadcast to `site_type`: one
    read-modify-write of the activation.

    ```mlir
    nns.site.update add %s to "model.layers.12.output" at 377 forward
        : tensor<576xf32> into tensor<?x576xf32>
    ```
  }];
  let arguments = !con((ins NNS_UpdateKindAttr:$kind, NNS_Tensor:$value), siteArgs,
                       (ins TypeAttrOf<NNS_Tensor>:$site_type));
  let assemblyFormat = [{
    $kind $value `to` $path `at` $order $phase attr-dict `:` type($value) `into` $site_type
  }];
  let hasVerifier = 1;
}

def NNS_CacheOp : NNS_SiteOp<"cache"> {
  let summary = "Save a site's value under its own path";
  let description = [{
    Saves the value the model continues with at the site (after this program's writes there)
    under `path`; inside `nns.steps` once per step, under `path.<step>`. Unlike a read, a cache
    does not order the program: it records the site whenever the model passes it.

    ```mlir
    nns.cache "model.layers.3.output" at 125 forward : tensor<?x576xf32>
    ```
  }];
  let arguments = !con(siteArgs, (ins TypeAttrOf<NNS_Tensor>:$site_type));
  let assemblyFormat = "$path `at` $order $phase attr-dict `:` $site_type";
  let hasVerifier = 1;
}

def NNS_SkipOp : NNS_Op<"skip"> {
  let summary = "Do not run a module; its output is the given value";
  let description = [{
    When the model reaches the module's input site (`input_order`) it does not run the module;
    the module's output site (`output_order`) sees `value`, broadcast to `output_type`. No site
    strictly between the two fires.

    ```mlir
    nns.skip "model.layers.7" at 218 to 248, %h : tensor<?x576xf32> into tensor<?x576xf32>
    ```
  }];
  let arguments = (ins StrAttr:$module, I64Attr:$input_order, I64Attr:$output_order,
                       NNS_Tensor:$value, TypeAttrOf<NNS_Tensor>:$output_type);
  let assemblyFormat = [{
    $module `at` $input_order `to` $output_order `,` $value attr-dict `:` type($value) `into`
    $output_type
  }];
  let hasVerifier = 1;
}

def NNS_SaveOp : NNS_Op<"save"> {
  let summary = "Return a value with the request under a name";
  let description = [{
    Copies `value` into the request's results under `name`; inside `nns.steps` once per step,
    under `name.<step>`. The runtime writes saves to the request's safetensors file.

    ```mlir
    nns.save "h", %h : tensor<576xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, NNS_Tensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NNS_StopOp : NNS_Op<"stop"> {
  let summary = "End the request once the program needs no more sites of this pass";
  let description = [{
    The forward pass ends after the last site this program touches before the stop; nothing
    is sampled and the request finishes.

    ```mlir
    nns.stop
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def NNS_FinishOp : NNS_Op<"finish"> {
  let summary = "End the request after the current step";
  let description = [{
    Like a stop token: the current step completes (its token is sampled) and no further step
    runs for this request.

    ```mlir
    nns.finish
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def NNS_CallModuleOp : NNS_Op<"call_module"> {
  let summary = "Apply a module of the model to a value without firing its hooks";
  let description = [{
    NNsight's ad-hoc module call: `lm_head(norm(h))`. The module maps the trailing dimensions
    of its input site to those of its output site; leading dimensions are kept.

    ```mlir
    %n = nns.call_module "model.norm"(%h) : (tensor<576xf32>) -> tensor<576xf32>
    ```
  }];
  let arguments = (ins StrAttr:$module, NNS_Tensor:$input);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$module `(` $input `)` attr-dict `:` functional-type($input, $result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor math (NumPy broadcasting, PyTorch semantics)
//===----------------------------------------------------------------------===//

def NNS_BinaryOp : NNS_Op<"binary", [Pure]> {
  let summary = "Elementwise binary operation with broadcasting";
  let description = [{
    `add sub mul div max min` on f32 or i64 and `and or` on i1, with NumPy broadcasting.
    Operands have the same element type (the front end inserts `nns.cast`).

    ```mlir
    %y = nns.binary mul %a, %s : tensor<f32>, tensor<576xf32> -> tensor<576xf32>
    ```
  }];
  let arguments = (ins NNS_BinaryKindAttr:$kind, NNS_Tensor:$lhs, NNS_Tensor:$rhs);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NNS_CompareOp : NNS_Op<"compare", [Pure]> {
  let summary = "Elementwise comparison with broadcasting, giving booleans";
  let description = [{
    ```mlir
    %c = nns.compare gt %s, %t : tensor<f32>, tensor<f32> -> tensor<i1>
    ```
  }];
  let arguments = (ins NNS_CompareKindAttr:$kind, NNS_Tensor:$lhs, NNS_Tensor:$rhs);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NNS_UnaryOp : NNS_Op<"unary", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise unary function";
  let description = [{
    `neg exp log sqrt abs relu gelu silu tanh sigmoid` on f32 (`neg`, `abs` also on i64),
    `not` on i1. The result has the operand's type.

    ```mlir
    %y = nns.unary silu %x : tensor<?x576xf32>
    ```
  }];
  let arguments = (ins NNS_UnaryKindAttr:$kind, NNS_Tensor:$input);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NNS_ReduceOp : NNS_Op<"reduce", [Pure]> {
  let summary = "Reduction along one dimension";
  let description = [{
    Removes dimension `dim` (non-negative). `argmax`/`argmin` give i64 indices, `mean` and
    `norm` (the 2-norm) need f32.

    ```mlir
    %t = nns.reduce argmax %l dim 0 : tensor<49152xf32> -> tensor<i64>
    ```
  }];
  let arguments = (ins NNS_ReduceKindAttr:$kind, NNS_Tensor:$input, I64Attr:$dim);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$kind $input `dim` $dim attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NNS_SoftmaxOp : NNS_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "Softmax (or log-softmax) along one dimension";
  let description = [{
    ```mlir
    %p = nns.softmax %l dim 0 : tensor<49152xf32>
    %lp = nns.softmax %l dim 0 log : tensor<49152xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$input, I64Attr:$dim, UnitAttr:$log);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$input `dim` $dim (`log` $log^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NNS_MatmulOp : NNS_Op<"matmul", [Pure]> {
  let summary = "Matrix product with torch.matmul's rules for 1-D and 2-D operands";
  let description = [{
    `[n, k] @ [k]` gives `[n]`, `[k] @ [k]` a scalar, `[k] @ [k, m]` gives `[m]`,
    `[n, k] @ [k, m]` gives `[n, m]`. f32 only.

    ```mlir
    %s = nns.matmul %h, %d : tensor<?x576xf32>, tensor<576xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$lhs, NNS_Tensor:$rhs);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def NNS_WhereOp : NNS_Op<"where", [Pure]> {
  let summary = "Elementwise select with broadcasting";
  let description = [{
    ```mlir
    %y = nns.where %c, %a, %b : tensor<?x576xi1>, tensor<?x576xf32>, tensor<f32>
        -> tensor<?x576xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$condition, NNS_Tensor:$lhs, NNS_Tensor:$rhs);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NNS_TopKOp : NNS_Op<"topk", [Pure]> {
  let summary = "The k largest values along the last dimension, in descending order";
  let description = [{
    ```mlir
    %v = nns.topk %l k 5 : tensor<49152xf32> -> tensor<5xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$input, I64Attr:$k);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$input `k` $k attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NNS_CastOp : NNS_Op<"cast", [Pure]> {
  let summary = "Change the element type, keeping the shape";
  let description = [{
    `.float()` and the promotions of mixed arithmetic (i1 -> i64 -> f32).

    ```mlir
    %f = nns.cast %t : tensor<i64> to tensor<f32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$input);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NNS_BroadcastOp : NNS_Op<"broadcast", [Pure]> {
  let summary = "Broadcast a value to the shape of another";
  let description = [{
    The result has `like`'s shape (including its token dimension) and `input`'s element type:
    `zeros_like(x)` is a broadcast of a 0-d constant like `x`.

    ```mlir
    %z = nns.broadcast %c like %x : tensor<f32>, tensor<?x576xf32> -> tensor<?x576xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$input, NNS_Tensor:$like);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $input `like` $like attr-dict `:` type($input) `,` type($like) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NNS_SelectOp : NNS_Op<"select", [Pure]> {
  let summary = "Index one dimension, removing it (torch.select)";
  let description = [{
    A negative `index` counts from the end of the dimension at run time (`-1` is the last
    token). An index outside the dimension is an error reported for the request.

    ```mlir
    %last = nns.select %h[%m1] dim 0 : tensor<?x576xf32>, tensor<i64> -> tensor<576xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$source, NNS_IndexScalar:$index, I64Attr:$dim);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $source `[` $index `]` `dim` $dim attr-dict `:` type($source) `,` type($index) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def NNS_SliceOp : NNS_Op<"slice", [Pure]> {
  let summary = "A strided slice of one dimension (Python slice semantics)";
  let description = [{
    `start` and `stop` may be negative (from the end); a missing `stop` means the end; bounds
    are clamped to the dimension as in Python.

    ```mlir
    %s = nns.slice %h dim 1 from 100 to 200 by 1 : tensor<?x576xf32> -> tensor<?x100xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$source, I64Attr:$dim, I64Attr:$start,
                       OptionalAttr<I64Attr>:$stop, I64Attr:$stride);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $source `dim` $dim `from` $start (`to` $stop^)? `by` $stride attr-dict `:` type($source)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NNS_SelectScatterOp : NNS_Op<"select_scatter", [Pure]> {
  let summary = "Replace one index of a dimension (torch.select_scatter)";
  let description = [{
    The result is `dest` with `dest[..., index, ...] = value` along `dim`, `value` broadcast to
    the selected slice's shape.

    ```mlir
    %n = nns.select_scatter %v into %h[%i] dim 0
        : tensor<576xf32>, tensor<?x576xf32>, tensor<i64> -> tensor<?x576xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$value, NNS_Tensor:$dest, NNS_IndexScalar:$index,
                       I64Attr:$dim);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $value `into` $dest `[` $index `]` `dim` $dim attr-dict `:` type($value) `,` type($dest)
    `,` type($index) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NNS_SliceScatterOp : NNS_Op<"slice_scatter", [Pure]> {
  let summary = "Replace a strided slice of a dimension (torch.slice_scatter)";
  let description = [{
    ```mlir
    %n = nns.slice_scatter %v into %h dim 1 from 0 to 8 by 1
        : tensor<f32>, tensor<?x576xf32> -> tensor<?x576xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$value, NNS_Tensor:$dest, I64Attr:$dim, I64Attr:$start,
                       OptionalAttr<I64Attr>:$stop, I64Attr:$stride);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $value `into` $dest `dim` $dim `from` $start (`to` $stop^)? `by` $stride attr-dict `:`
    type($value) `,` type($dest) `->` type($result)
  }];
  let hasVerifier = 1;
}

include "nnsc/Dialect/NNS/NNSScheduleOps.td"

#endif // NNSC_DIALECT_NNS_NNSOPS_TD

//===- NNSSiteOps.td - ops on model sites ------------------*- tablegen -*-===//
//
// Ops that touch the model: site reads, writes and updates, caches, skips, saves, stop and
// finish, and module calls. They carry the resolved site as attributes (canonical path,
// firing order, phase) so that scheduling needs no architecture lookup.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSSITEOPS_TD
#define NNSC_DIALECT_NNS_NNSSITEOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSAttrs.td"
include "nnsc/Dialect/NNS/NNSTypes.td"

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

#endif // NNSC_DIALECT_NNS_NNSSITEOPS_TD

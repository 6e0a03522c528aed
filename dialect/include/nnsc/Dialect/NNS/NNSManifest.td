//===- NNSManifest.td - the bundle manifest as typed attributes -*- tablegen -*-===//
//
// What a bundle declares to the runtime (runtime/include/nnsc/Bundle/BundleABI.h, "the
// manifest"), as attributes: nns-lower-to-kernels builds `#nns.manifest` on kernel-level IR's
// module (`nns.manifest`), and the bundle target turns it into the ABI's tables. Each attribute
// verifies itself (the verify functions in NNSManifest.cpp), so the parser and the pass
// pipeline's verifier reject a malformed manifest at the attribute that is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSMANIFEST_TD
#define NNSC_DIALECT_NNS_NNSMANIFEST_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSAttrs.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

// A list in square brackets, `[]` when empty (ArrayRefParameter's own syntax has no brackets
// and cannot be empty).
class NNS_ListParameter<string elem, string desc = ""> : ArrayRefParameter<elem, desc> {
  let parser = "::nnsc::nns::parseBracketedList<" # elem # ">($_parser)";
  let printer = "::nnsc::nns::printBracketedList($_printer, $_self)";
}

// A nested attribute printed in full (`#nns.model_dims<...>`), not stripped to `<...>`.
class NNS_AttrParameter<string attr, string desc = ""> : AttrParameter<attr, desc> {
  let printer = "$_printer.printAttribute($_self)";
}

class NNS_Attr<string name, string attrMnemonic> : AttrDef<NNS_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def NNS_ModelDimsAttr : NNS_Attr<"ModelDims", "model_dims"> {
  let summary = "the model dimensions a bundle was compiled for";
  let parameters = (ins "int64_t":$hidden, "int64_t":$intermediate, "int64_t":$layers,
                        "int64_t":$heads, "int64_t":$kv_heads, "int64_t":$head_dim,
                        "int64_t":$vocab);
}

def NNS_TargetAttr : NNS_Attr<"Target", "target"> {
  let summary = "what a program is compiled for";
  let description = [{
    Recorded by annotateTarget (compiler/Conversion) as the module attribute `nns.target` so
    that the lowering to kernels (and lit tests of it) needs no schema: the source's hash, the
    architecture, its schema hash and dimensions, and the schema index of every module the
    program calls (`modules`: path -> i32).
  }];
  let parameters = (ins StringRefParameter<"hash of the .nns source">:$source_hash,
                        StringRefParameter<"the model architecture">:$arch,
                        "uint64_t":$schema_hash,
                        NNS_AttrParameter<"::nnsc::nns::ModelDimsAttr">:$dims,
                        "::mlir::DictionaryAttr":$modules);
}

def NNS_ParamDescAttr : NNS_Attr<"ParamDesc", "param_desc"> {
  let summary = "a param of a trace: its name, type and default";
  let description = [{
    `type` is a static tensor of f32, bf16, f16, i64 or i1 (bool) of rank at most 4; a param
    without `default_value` must be given by every request.
  }];
  let parameters = (ins StringRefParameter<"the param's name">:$name,
                        "::mlir::RankedTensorType":$type,
                        OptionalParameter<"::mlir::DenseElementsAttr">:$default_value);
}

def NNS_SaveDescAttr : NNS_Attr<"SaveDesc", "save_desc"> {
  let summary = "a value a trace saves";
  let description = [{
    `type` may have `?` dimensions: the token count, known per request.
  }];
  let parameters = (ins StringRefParameter<"the save's name">:$name,
                        "::mlir::RankedTensorType":$type,
                        NNS_ListParameter<"::nnsc::nns::SaveFlag">:$flags);
}

def NNS_SiteEntryAttr : NNS_Attr<"SiteEntry", "site_entry"> {
  let summary = "the kernel a trace runs at one site";
  let parameters = (ins "int64_t":$site,
                        StringRefParameter<"the site's module path">:$path,
                        "::nnsc::nns::Phase":$phase,
                        NNS_ListParameter<"::nnsc::nns::SiteAccess">:$access,
                        "::mlir::FlatSymbolRefAttr":$kernel);
}

def NNS_TraceDescAttr : NNS_Attr<"TraceDesc", "trace_desc"> {
  let summary = "one trace of a bundle";
  let description = [{
    `frame_heap_slots` are the frame offsets of heap pointers: 8-aligned, ascending, inside
    `frame_bytes`. Param, save and invoke names are unique; sites ascend without repeats.
  }];
  let parameters = (ins StringRefParameter<"the trace's name">:$name,
                        NNS_ListParameter<"::mlir::StringAttr">:$invoke_names,
                        NNS_ListParameter<"::nnsc::nns::TraceFlag">:$flags,
                        "int64_t":$frame_bytes,
                        NNS_ListParameter<"int64_t">:$frame_heap_slots,
                        NNS_ListParameter<"::nnsc::nns::ParamDescAttr">:$params,
                        NNS_ListParameter<"::nnsc::nns::SaveDescAttr">:$saves,
                        NNS_ListParameter<"::nnsc::nns::SiteEntryAttr">:$sites);
}

def NNS_ManifestAttr : NNS_Attr<"Manifest", "manifest"> {
  let summary = "the manifest of a bundle";
  let parameters = (ins StringRefParameter<"hash of the .nns source">:$source_hash,
                        StringRefParameter<"the model architecture">:$arch,
                        "uint64_t":$schema_hash,
                        NNS_AttrParameter<"::nnsc::nns::ModelDimsAttr">:$dims,
                        NNS_ListParameter<"::nnsc::nns::TraceDescAttr">:$traces);
}

#endif // NNSC_DIALECT_NNS_NNSMANIFEST_TD

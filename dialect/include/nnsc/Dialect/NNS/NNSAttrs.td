//===- NNSAttrs.td - nns dialect enums ---------------------*- tablegen -*-===//
//
// Enumerations carried as attributes by nns ops. They print as bare keywords
// (`forward`, `add`, `argmax`) in the ops' assembly formats.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSATTRS_TD
#define NNSC_DIALECT_NNS_NNSATTRS_TD

include "mlir/IR/EnumAttr.td"

// When a site fires: during the forward pass over the token batch, or once per sequence after
// it (the logits the sampler uses, the sampled token, the finished request's tokens).
def NNS_PhaseAttr : I32EnumAttr<"Phase", "phase in which a site fires", [
    I32EnumAttrCase<"Forward", 0, "forward">,
    I32EnumAttrCase<"Logits", 1, "logits">,
    I32EnumAttrCase<"Samples", 2, "samples">,
    I32EnumAttrCase<"Result", 3, "result">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_BinaryKindAttr : I32EnumAttr<"BinaryKind", "elementwise binary operation", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Sub", 1, "sub">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Div", 3, "div">,
    I32EnumAttrCase<"Max", 4, "max">,
    I32EnumAttrCase<"Min", 5, "min">,
    I32EnumAttrCase<"And", 6, "and">,
    I32EnumAttrCase<"Or", 7, "or">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_CompareKindAttr : I32EnumAttr<"CompareKind", "elementwise comparison", [
    I32EnumAttrCase<"LT", 0, "lt">,
    I32EnumAttrCase<"LE", 1, "le">,
    I32EnumAttrCase<"GT", 2, "gt">,
    I32EnumAttrCase<"GE", 3, "ge">,
    I32EnumAttrCase<"EQ", 4, "eq">,
    I32EnumAttrCase<"NE", 5, "ne">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_UnaryKindAttr : I32EnumAttr<"UnaryKind", "elementwise unary function", [
    I32EnumAttrCase<"Neg", 0, "neg">,
    I32EnumAttrCase<"Not", 1, "not">,
    I32EnumAttrCase<"Exp", 2, "exp">,
    I32EnumAttrCase<"Log", 3, "log">,
    I32EnumAttrCase<"Sqrt", 4, "sqrt">,
    I32EnumAttrCase<"Abs", 5, "abs">,
    I32EnumAttrCase<"Relu", 6, "relu">,
    I32EnumAttrCase<"Gelu", 7, "gelu">,
    I32EnumAttrCase<"Silu", 8, "silu">,
    I32EnumAttrCase<"Tanh", 9, "tanh">,
    I32EnumAttrCase<"Sigmoid", 10, "sigmoid">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_ReduceKindAttr : I32EnumAttr<"ReduceKind", "reduction along one dimension", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Max", 2, "max">,
    I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"ArgMax", 4, "argmax">,
    I32EnumAttrCase<"ArgMin", 5, "argmin">,
    I32EnumAttrCase<"Norm", 6, "norm">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_UpdateKindAttr : I32EnumAttr<"UpdateKind", "in-place update of a site", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Sub", 1, "sub">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Div", 3, "div">]> {
  let cppNamespace = "::nnsc::nns";
}

// The bundle manifest's flag sets (NNSManifest.td), one enum per set. Each case's value is its
// bit in the C ABI (runtime/include/nnsc/Bundle/BundleABI.h); the bundle target checks that
// with static_asserts.
def NNS_TraceFlagAttr : I32EnumAttr<"TraceFlag", "what a trace does besides its sites", [
    I32EnumAttrCase<"ReadsPrompt", 1, "reads_prompt">,
    I32EnumAttrCase<"WritesPrompt", 2, "writes_prompt">,
    I32EnumAttrCase<"Stops", 4, "stops">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_SaveFlagAttr : I32EnumAttr<"SaveFlag", "how a save is collected", [
    I32EnumAttrCase<"PerStep", 1, "per_step">]> {
  let cppNamespace = "::nnsc::nns";
}

def NNS_SiteAccessAttr : I32EnumAttr<"SiteAccess", "what a kernel does to its site's value", [
    I32EnumAttrCase<"Read", 1, "read">,
    I32EnumAttrCase<"Write", 2, "write">,
    I32EnumAttrCase<"Skip", 4, "skip">]> {
  let cppNamespace = "::nnsc::nns";
}

#endif // NNSC_DIALECT_NNS_NNSATTRS_TD

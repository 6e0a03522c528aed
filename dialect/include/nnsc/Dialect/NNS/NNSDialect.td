//===- NNSDialect.td - nns dialect definition --------------*- tablegen -*-===//
//
// The nns dialect: trace programs over the hook points ("sites") of a language model.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSDIALECT_TD
#define NNSC_DIALECT_NNS_NNSDIALECT_TD

include "mlir/IR/OpBase.td"

def NNS_Dialect : Dialect {
  let name = "nns";
  let cppNamespace = "::nnsc::nns";
  let summary = "Interventions on the activations of a language model";
  let description = [{
    The `nns` dialect represents a trace program: which sites (hook points) of a model's forward
    pass are read or replaced, what is computed from them, and what is saved. Site values are
    tensors whose leading dimension is the symbolic token count `T` (`?` in the type); the
    remaining dimensions are the model's, resolved against its architecture schema.
    Constants (literals, static indices) are `arith.constant` tensors.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];

  // What the scheduling passes (Passes.td) and the lowering to kernels tell each other,
  // declared once with its type: the dialect verifier refuses an `nns.*` attribute that is
  // not declared here or has another type, so a pass reads them with checked accessors.
  let discardableAttrs = (ins
    // nns-assign-sites: the site event an op runs at (-1: recomputed where used).
    "::mlir::IntegerAttr":$at,
    // nns-step-guards: [start, stop or -1, stride] of the steps an op runs at.
    "::mlir::DenseI64ArrayAttr":$guard,
    // nns-step-guards, on a save or cache that was in a steps loop: saved per step.
    "::mlir::UnitAttr":$per_step,
    // nns-order-invokes: an op's invoke index; on a trace, its invokes' names.
    "::mlir::IntegerAttr":$invoke,
    "::mlir::ArrayAttr":$invokes,
    // nns-allocate-frame: frame offsets of an op's results (-1: none); on a trace, the
    // frame's size and the offsets of its heap pointers.
    "::mlir::DenseI64ArrayAttr":$frame,
    "::mlir::IntegerAttr":$frame_bytes,
    "::mlir::DenseI64ArrayAttr":$frame_heap,
    // nns-fuse-sites: on a frame load, its store's guard and invoke name; on a save or
    // cache, its index in the trace's save table; on the module, the traces' manifests.
    "::mlir::DenseI64ArrayAttr":$stored_guard,
    "::mlir::StringAttr":$stored_invoke,
    "::mlir::IntegerAttr":$save_index,
    // On the module: the traces' manifests, a list of #nns.trace_desc (nns-fuse-sites; their
    // params and sites are filled in by nns-lower-to-kernels).
    "::mlir::ArrayAttr":$traces,
    // annotateTarget (compiler/Conversion): what the bundle is compiled for.
    "::nnsc::nns::TargetAttr":$target,
    // nns-lower-to-kernels, on kernel-level IR's module: the bundle manifest (NNSManifest.td).
    "::nnsc::nns::ManifestAttr":$manifest
  );
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the manifest attributes (NNSManifest.td; defined in NNSManifest.cpp).
    void registerManifestAttributes();
  }];
}

class NNS_Op<string mnemonic, list<Trait> traits = []>
    : Op<NNS_Dialect, mnemonic, traits>;

#endif // NNSC_DIALECT_NNS_NNSDIALECT_TD

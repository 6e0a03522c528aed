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
}

class NNS_Op<string mnemonic, list<Trait> traits = []>
    : Op<NNS_Dialect, mnemonic, traits>;

#endif // NNSC_DIALECT_NNS_NNSDIALECT_TD

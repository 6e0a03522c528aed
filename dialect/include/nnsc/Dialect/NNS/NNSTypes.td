//===- NNSTypes.td - nns value types -----------------------*- tablegen -*-===//
//
// Type constraints of nns values: ranked tensors of f32, i64 or i1 (scalars are 0-d
// tensors; the token dimension T of a site is `?`).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSTYPES_TD
#define NNSC_DIALECT_NNS_NNSTYPES_TD

include "mlir/IR/OpBase.td"

def NNS_Tensor : RankedTensorOf<[F32, I64, I1]>;
def NNS_IndexScalar : 0DTensorOf<[I64]>;
def NNS_BoolScalar : 0DTensorOf<[I1]>;

#endif // NNSC_DIALECT_NNS_NNSTYPES_TD

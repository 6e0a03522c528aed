//===- NNSMathOps.td - tensor math ops ---------------------*- tablegen -*-===//
//
// Tensor math with NumPy broadcasting and PyTorch semantics: elementwise arithmetic,
// comparisons, reductions, softmax, matmul, where, topk and casts.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSMATHOPS_TD
#define NNSC_DIALECT_NNS_NNSMATHOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSAttrs.td"
include "nnsc/Dialect/NNS/NNSTypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

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

#endif // NNSC_DIALECT_NNS_NNSMATHOPS_TD

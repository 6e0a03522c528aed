//===- NNSShapeOps.td - shape and indexing ops -------------*- tablegen -*-===//
//
// Ops that change shapes or address parts of a value: broadcast, select and slice (PyTorch
// indexing) and their scatters (indexed updates in value semantics).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DIALECT_NNS_NNSSHAPEOPS_TD
#define NNSC_DIALECT_NNS_NNSSHAPEOPS_TD

include "nnsc/Dialect/NNS/NNSDialect.td"
include "nnsc/Dialect/NNS/NNSTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

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

def NNS_ReshapeOp : NNS_Op<"reshape", [Pure]> {
  let summary = "The same elements in row-major order, in another shape (torch.reshape)";
  let description = [{
    `view`, `reshape`, `unsqueeze`, `None` in an index and `keepdim=` all become this op. The
    result's static sizes are given by its type. With one dynamic result size, that size is the
    element count divided by the static sizes (checked at run time to divide exactly); with
    several, each takes the size of the input's dynamic dimension of the same rank among the
    dynamic ones, and the static sizes must have equal products.

    ```mlir
    %v = nns.reshape %h : tensor<?x576xf32> -> tensor<?x9x64xf32>
    %f = nns.reshape %h : tensor<?x576xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$input);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NNS_TransposeOp : NNS_Op<"transpose", [Pure]> {
  let summary = "Swap two dimensions (torch.transpose)";
  let description = [{
    ```mlir
    %t = nns.transpose %m dims 0, 1 : tensor<?x576xf32> -> tensor<576x?xf32>
    ```
  }];
  let arguments = (ins NNS_Tensor:$input, I64Attr:$dim0, I64Attr:$dim1);
  let results = (outs NNS_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dim0 `,` $dim1 attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // NNSC_DIALECT_NNS_NNSSHAPEOPS_TD

//===- ABIBuilder.h - emit IR that speaks the bundle ABI --------*- C++ -*-===//
//
// Helpers for code generation of site kernels in kernel-level IR: create a function of the
// kernel signature, loop over its groups, read group fields, view the rows of the site tensor
// or a param as a strided memref, and call the runtime's callbacks through their function
// pointers. Every field address comes from ABILayout.h.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_ABIBUILDER_H
#define NNSC_TARGET_BUNDLE_ABIBUILDER_H

#include "nnsc/Target/Bundle/ABILayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace nnsc::bundle {

/// The four arguments of a site kernel.
struct KernelArgs {
  mlir::Value value;     ///< !llvm.ptr to the site's nnsc_tensor
  mlir::Value groups;    ///< !llvm.ptr to nnsc_group[numGroups]
  mlir::Value numGroups; ///< i32
  mlir::Value runtime;   ///< !llvm.ptr to nnsc_runtime
};

/// Fields of nnsc_group that kernels read.
enum class GroupField { Row, Rows, Position, Step, Invoke, Frame, Params, Request };

/// Emits ABI accesses at the builder's insertion point, inside one kernel function.
class ABIBuilder {
public:
  /// Creates `func.func @name` with the kernel signature at the end of `module` and an entry
  /// block; the builder is left at the start of that block.
  static mlir::func::FuncOp createKernel(mlir::OpBuilder &builder, mlir::ModuleOp module,
                                         mlir::Location loc, llvm::StringRef name);

  /// Builds inside `kernel`, which must have the kernel signature.
  ABIBuilder(mlir::OpBuilder &builder, mlir::func::FuncOp kernel);

  KernelArgs args() const { return kernelArgs; }

  /// Emits `scf.for` over the groups; `body` receives the !llvm.ptr of each nnsc_group with the
  /// builder inside the loop.
  void forEachGroup(llvm::function_ref<void(mlir::Value group)> body);
  /// The same loop; `body` also receives the group's index (an `index` value), for per-group
  /// storage that a later loop of the same kernel reads.
  void forEachGroup(llvm::function_ref<void(mlir::Value group, mlir::Value index)> body);

  /// Loads a group field: i64 for row/rows/position/step, i32 for invoke, !llvm.ptr otherwise.
  mlir::Value load(mlir::Value group, GroupField field);
  /// !llvm.ptr to the request's param `index` (an nnsc_tensor).
  mlir::Value param(mlir::Value group, int32_t index);
  /// !llvm.ptr to byte `offset` of the request's frame.
  mlir::Value frameSlot(mlir::Value group, int64_t offset);

  /// i1: the tensor has this dtype and rank.
  mlir::Value hasLayout(mlir::Value tensor, abi::DType dtype, int64_t rank);
  /// i64: shape[dim] or strides[dim] of an nnsc_tensor.
  mlir::Value shape(mlir::Value tensor, int64_t dim);
  mlir::Value stride(mlir::Value tensor, int64_t dim);

  /// A `memref<?x...xT, strided<[?, ...], offset: ?>>` of rows [row, row + rows) of an
  /// nnsc_tensor of static rank `rank` (the leading dimension is the rows). The caller checks
  /// the rows are in bounds (see rowsInBounds).
  mlir::Value rowsView(mlir::Value tensor, mlir::Value row, mlir::Value rows, int64_t rank,
                       mlir::Type elementType);
  /// The site value [heads, rows, context] of one sequence in an attention pattern tensor
  /// [tokens, heads, max_context] (its rows [row, row + rows), their first `context`
  /// positions; the token dimension moves to the middle). The caller checks the bounds.
  mlir::Value patternView(mlir::Value tensor, mlir::Value row, mlir::Value rows,
                          mlir::Value context, mlir::Type elementType);
  /// The whole tensor (a param) as a strided memref of static rank `rank`.
  mlir::Value view(mlir::Value tensor, int64_t rank, mlir::Type elementType);
  /// A strided memref of static rank `sizes.size()` over raw memory at `data` (an !llvm.ptr,
  /// e.g. a frame slot or a heap copy), with element strides `strides` and offset 0.
  mlir::Value pointerView(mlir::Value data, llvm::ArrayRef<mlir::Value> sizes,
                          llvm::ArrayRef<mlir::Value> strides, mlir::Type elementType);
  /// i1: 0 <= row and row + rows <= shape[0].
  mlir::Value rowsInBounds(mlir::Value tensor, mlir::Value row, mlir::Value rows);

  /// An nnsc_tensor on the kernel's stack describing the strided memref `memref`, for save and
  /// call_module. The slot is allocated once in the entry block and refilled here.
  mlir::Value describe(mlir::Value memref, abi::DType dtype);

  /// report_error(request, message, arg0, arg1): `args` (at most two i64 values, missing ones
  /// 0) are the numbers `{0}` and `{1}` in `message` stand for.
  void reportError(mlir::Value request, llvm::StringRef message, mlir::ValueRange args = {});
  void save(mlir::Value request, int32_t saveIndex, mlir::Value step, mlir::Value tensor);
  void stop(mlir::Value request);
  /// rt->skip(rt->ctx, request): this firing skips the module for the request.
  void skip(mlir::Value request);
  void finish(mlir::Value request);
  /// i32 status of call_module(ctx, module, input, output).
  mlir::Value callModule(int32_t module, mlir::Value input, mlir::Value output);

  /// Emits `return 0`.
  void returnSuccess();

private:
  mlir::Value fieldAddress(mlir::Value base, int64_t offset);
  mlir::Value loadField(mlir::Value base, int64_t offset, mlir::Type type);
  mlir::Value callback(int64_t offset);
  /// rt->CALLBACK(rt->ctx, request) for the void (ctx, request) callback at `offset`.
  void requestCallback(int64_t offset, mlir::Value request);
  mlir::Value i32(int64_t v);
  mlir::Value i64(int64_t v);
  mlir::Value stackTensor();
  mlir::Value messageGlobal(llvm::StringRef message);

  mlir::OpBuilder &builder;
  mlir::func::FuncOp kernel;
  mlir::Location loc;
  KernelArgs kernelArgs;
  unsigned numMessages = 0;
};

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_ABIBUILDER_H

//===- KernelEmitter.h - one nns.kernel to a site kernel --------*- C++ -*-===//
//
// Lowers the body of one `nns.kernel` to a func.func of the bundle ABI: a loop over the groups
// bound in the batch, per run of ops with the same step guard and invoke; inside, every nns
// tensor value becomes a strided memref (site rows and params are views, results are fresh
// buffers) computed with scf loops. Index and shape checks report an error for the group's
// request and skip the rest of its work (docs/Compiler.md, "Kernels").
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_CONVERSION_NNSTOKERNELS_KERNELEMITTER_H
#define NNSC_CONVERSION_NNSTOKERNELS_KERNELEMITTER_H

#include "nnsc/Dialect/NNS/NNSOps.h"
#include "nnsc/Target/Bundle/ABIBuilder.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace nnsc::kernels {

/// What the emitter needs from outside the kernel.
struct KernelContext {
  llvm::StringMap<int32_t> paramIndex;  ///< param name -> index in the group's params
  llvm::StringMap<int32_t> moduleIndex; ///< module path -> schema module index
};

class KernelEmitter {
public:
  KernelEmitter(mlir::OpBuilder &builder, mlir::func::FuncOp func, nns::KernelOp kernel,
                const KernelContext &context);

  /// Emits the whole function body; fails with an error on an op it cannot lower.
  mlir::LogicalResult emit();

private:
  // Structure (KernelEmitter.cpp).
  mlir::LogicalResult emitRun(llvm::ArrayRef<mlir::Operation *> ops, mlir::Attribute guard,
                              int64_t invoke);
  /// A run's top-level module call, made once for every group that reaches it.
  struct BatchedCall;
  /// After the group loop that reached `call`: stacks the groups' inputs, calls the module once
  /// and sets where each group's rows of the output lie.
  void emitBatchedCall(BatchedCall &call, mlir::Value numGroups);
  /// Inside the next group loop: the group's rows of the call's output.
  mlir::Value batchedOutput(const BatchedCall &call, mlir::Value groupIndex);
  mlir::LogicalResult emitBlock(llvm::ArrayRef<mlir::Operation *> ops);
  mlir::LogicalResult emitIf(nns::IfOp op);
  mlir::Value guardCondition(mlir::Attribute guard, int64_t invoke);
  mlir::LogicalResult emitSiteView();
  /// Continues in a branch taken when `ok` holds; the other branch reports `message` (unless
  /// empty; `{0}` and `{1}` in it stand for the i64 `args`), marks the group failed and frees
  /// the current scope's buffers.
  void check(mlir::Value ok, const llvm::Twine &message, mlir::Location loc,
             mlir::ValueRange args = {});
  void freeScope();
  /// Keeps a heap copy of `value` (of nns type `type`) beyond the current group or branch: its
  /// address and sizes go to `slot[prefix..., 0 .. rank]` (a memref of index).
  void keepCopy(mlir::Value value, mlir::RankedTensorType type, mlir::Value slot,
                mlir::ValueRange prefix);
  /// The copy kept by keepCopy, as a view; freeing it frees the copy.
  mlir::Value keptView(mlir::Value slot, mlir::ValueRange prefix, mlir::RankedTensorType type);
  std::string where(mlir::Location loc) const;

  // Ops (TensorMath.cpp, Reductions.cpp, ShapeOps.cpp, SiteOps.cpp).
  mlir::LogicalResult emitOp(mlir::Operation *op);
  mlir::LogicalResult emitMath(mlir::Operation *op);
  mlir::LogicalResult emitSiteOp(mlir::Operation *op);
  mlir::Value emitConstant(mlir::DenseElementsAttr value, mlir::Location loc);
  mlir::Value emitParam(nns::GetParamOp op);
  mlir::Value emitElementwise(
      mlir::Operation *op, mlir::ValueRange inputs,
      llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)> body);
  mlir::Value emitReduce(nns::ReduceOp op);
  mlir::Value emitSoftmax(nns::SoftmaxOp op);
  mlir::Value emitMatmul(nns::MatmulOp op);
  mlir::Value emitTopK(nns::TopKOp op);
  mlir::Value emitReshape(nns::ReshapeOp op);
  mlir::Value emitTranspose(nns::TransposeOp op);
  mlir::Value emitSelect(mlir::Value source, mlir::Value index, int64_t dim, mlir::Location loc);
  mlir::Value emitSlice(mlir::Value source, int64_t dim, int64_t start, std::optional<int64_t> stop,
                        int64_t stride);
  mlir::Value emitCallModule(nns::CallModuleOp op);
  void emitFrameStore(nns::FrameStoreOp op);
  mlir::Value emitFrameLoad(nns::FrameLoadOp op);
  /// The step at which the value a frame load reads was stored, if it was computed.
  mlir::Value storedStep(nns::FrameLoadOp op);
  void emitSave(mlir::Value memref, mlir::Type elementType, int64_t index, mlir::Location loc);
  /// dest[i...] = combine(dest[i...], src[broadcast(i...)]), or a plain copy without combine;
  /// `shapes` describes both for the error when src does not broadcast.
  void copyInto(
      mlir::Value dest, mlir::Value src, mlir::Location loc,
      llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::Value)>
          combine = nullptr,
      llvm::StringRef shapes = "");
  /// A site write, update or skip: `value` (of nns type `type`) into the site's rows.
  void copyIntoSite(
      mlir::Value value, mlir::Type type, mlir::Type siteType, mlir::Location loc,
      llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::Value)>
          combine = nullptr);

  // Helpers (TensorMath.cpp).
  mlir::Value alloc(mlir::Type elementType, mlir::ValueRange sizes, bool tracked = true);
  mlir::Value dim(mlir::Value memref, int64_t d);
  mlir::Value index(int64_t v);
  mlir::Value toUniform(mlir::Value memref);
  mlir::Value lookup(mlir::Value tensor) const { return values.lookup(tensor); }
  mlir::Value loadScalar(mlir::Value memref);
  bool siteWrittenAfter(mlir::Operation *op) const;

  mlir::OpBuilder &builder;
  mlir::func::FuncOp func;
  nns::KernelOp kernel;
  const KernelContext &context;
  bundle::ABIBuilder abi;
  mlir::Type siteElementType;
  int64_t siteRank = 0;

  // Per group.
  mlir::Value group, request, step;
  mlir::Value siteView;
  mlir::Value failedFlag; ///< memref<i1>: a check of this group failed
  llvm::SmallVector<llvm::SmallVector<mlir::Value>> scopes;
  llvm::DenseMap<mlir::Value, mlir::Value> values;
  llvm::SmallVector<mlir::Operation *> order; ///< the kernel's ops in program order
};

/// "[?, 64]": a shape for error messages, '?' for sizes known at run time.
std::string shapeText(mlir::Type type);
/// What a '?' in shapeText means to the user.
extern const char *const kDynamicSizes;

/// The uniform memref type of a kernel value: fully dynamic sizes, strides and offset.
mlir::MemRefType uniformType(mlir::Type elementType, int64_t rank);

} // namespace nnsc::kernels

#endif // NNSC_CONVERSION_NNSTOKERNELS_KERNELEMITTER_H

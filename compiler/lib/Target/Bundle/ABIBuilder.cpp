//===- ABIBuilder.cpp - emit IR that speaks the bundle ABI ----------------===//

#include "nnsc/Target/Bundle/ABIBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace nnsc::bundle {

namespace {
Type ptrType(OpBuilder &builder) { return LLVM::LLVMPointerType::get(builder.getContext()); }
} // namespace

func::FuncOp ABIBuilder::createKernel(OpBuilder &builder, ModuleOp module, Location loc,
                                      StringRef name) {
  Type ptr = ptrType(builder);
  auto type =
      builder.getFunctionType({ptr, ptr, builder.getI32Type(), ptr}, {builder.getI32Type()});
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, loc, name, type);
  // Through the builder, so that a rewriter building the kernel (nns-lower-to-kernels' dialect
  // conversion) tracks the block and can roll it back.
  SmallVector<Location> argLocs(type.getNumInputs(), loc);
  builder.createBlock(&func.getBody(), {}, type.getInputs(), argLocs);
  return func;
}

ABIBuilder::ABIBuilder(OpBuilder &builder, func::FuncOp kernel)
    : builder(builder), kernel(kernel), loc(kernel.getLoc()) {
  Block &entry = kernel.getBody().front();
  assert(entry.getNumArguments() == 4 && "kernel must have the ABI signature");
  kernelArgs = {entry.getArgument(0), entry.getArgument(1), entry.getArgument(2),
                entry.getArgument(3)};
}

Value ABIBuilder::i32(int64_t v) {
  return arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), v);
}

Value ABIBuilder::i64(int64_t v) {
  return arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), v);
}

Value ABIBuilder::fieldAddress(Value base, int64_t offset) {
  if (offset == 0)
    return base;
  return LLVM::GEPOp::create(builder, loc, ptrType(builder), builder.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)},
                             LLVM::GEPNoWrapFlags::inbounds);
}

Value ABIBuilder::loadField(Value base, int64_t offset, Type type) {
  return LLVM::LoadOp::create(builder, loc, type, fieldAddress(base, offset));
}

void ABIBuilder::forEachGroup(function_ref<void(Value group)> body) {
  forEachGroup([&](Value group, Value) { body(group); });
}

void ABIBuilder::forEachGroup(function_ref<void(Value group, Value index)> body) {
  Value lower = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value upper =
      arith::IndexCastOp::create(builder, loc, builder.getIndexType(), kernelArgs.numGroups);
  auto loop = scf::ForOp::create(builder, loc, lower, upper, one);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(loop.getBody()->getTerminator());
  Value index =
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), loop.getInductionVar());
  Value group = LLVM::GEPOp::create(
      builder, loc, ptrType(builder), builder.getI8Type(), kernelArgs.groups,
      ArrayRef<LLVM::GEPArg>{
          arith::MulIOp::create(builder, loc, index, i64(abi::group::kSize)).getResult()},
      LLVM::GEPNoWrapFlags::inbounds);
  body(group, loop.getInductionVar());
}

Value ABIBuilder::load(Value group, GroupField field) {
  switch (field) {
  case GroupField::Row:
    return loadField(group, abi::group::kRow, builder.getI64Type());
  case GroupField::Rows:
    return loadField(group, abi::group::kRows, builder.getI64Type());
  case GroupField::Position:
    return loadField(group, abi::group::kPosition, builder.getI64Type());
  case GroupField::Step:
    return loadField(group, abi::group::kStep, builder.getI64Type());
  case GroupField::Invoke:
    return loadField(group, abi::group::kInvoke, builder.getI32Type());
  case GroupField::Frame:
    return loadField(group, abi::group::kFrame, ptrType(builder));
  case GroupField::Params:
    return loadField(group, abi::group::kParams, ptrType(builder));
  case GroupField::Request:
    return loadField(group, abi::group::kRequest, ptrType(builder));
  }
  llvm_unreachable("unknown group field");
}

Value ABIBuilder::param(Value group, int32_t index) {
  return fieldAddress(load(group, GroupField::Params), index * abi::tensor::kSize);
}

Value ABIBuilder::frameSlot(Value group, int64_t offset) {
  return fieldAddress(load(group, GroupField::Frame), offset);
}

Value ABIBuilder::shape(Value tensor, int64_t dim) {
  return loadField(tensor, abi::tensor::kShape + 8 * dim, builder.getI64Type());
}

Value ABIBuilder::stride(Value tensor, int64_t dim) {
  return loadField(tensor, abi::tensor::kStrides + 8 * dim, builder.getI64Type());
}

Value ABIBuilder::hasLayout(Value tensor, abi::DType dtype, int64_t rank) {
  Value dtypeOk =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                            loadField(tensor, abi::tensor::kDtype, builder.getI32Type()),
                            i32(static_cast<int32_t>(dtype)));
  Value rankOk =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                            loadField(tensor, abi::tensor::kRank, builder.getI32Type()), i32(rank));
  return arith::AndIOp::create(builder, loc, dtypeOk, rankOk);
}

Value ABIBuilder::rowsInBounds(Value tensor, Value row, Value rows) {
  Value end = arith::AddIOp::create(builder, loc, row, rows);
  Value lowOk = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, row, i64(0));
  Value highOk =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle, end, shape(tensor, 0));
  return arith::AndIOp::create(builder, loc, lowOk, highOk);
}

/// Builds the LLVM memref descriptor {allocated, aligned, offset, sizes, strides} and casts it to
/// the memref type; finalize-memref-to-llvm and reconcile-unrealized-casts fold the cast away.
static Value makeView(OpBuilder &builder, Location loc, Value data, Value offset,
                      ArrayRef<Value> sizes, ArrayRef<Value> strides, Type elementType) {
  int64_t rank = sizes.size();
  MLIRContext *ctx = builder.getContext();
  Type i64 = builder.getI64Type();
  auto array = LLVM::LLVMArrayType::get(i64, rank);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // A 0-d memref's descriptor has no size and stride arrays.
  SmallVector<Type> fields{ptr, ptr, i64};
  if (rank > 0)
    fields.append({array, array});
  auto descriptorType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  Value descriptor = LLVM::UndefOp::create(builder, loc, descriptorType);
  descriptor = LLVM::InsertValueOp::create(builder, loc, descriptor, data, ArrayRef<int64_t>{0});
  descriptor = LLVM::InsertValueOp::create(builder, loc, descriptor, data, ArrayRef<int64_t>{1});
  descriptor = LLVM::InsertValueOp::create(builder, loc, descriptor, offset, ArrayRef<int64_t>{2});
  for (int64_t d = 0; d < rank; ++d) {
    descriptor =
        LLVM::InsertValueOp::create(builder, loc, descriptor, sizes[d], ArrayRef<int64_t>{3, d});
    descriptor =
        LLVM::InsertValueOp::create(builder, loc, descriptor, strides[d], ArrayRef<int64_t>{4, d});
  }
  SmallVector<int64_t> dynamic(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, dynamic);
  auto type = MemRefType::get(dynamic, elementType, layout);
  return UnrealizedConversionCastOp::create(builder, loc, type, descriptor).getResult(0);
}

Value ABIBuilder::rowsView(Value tensor, Value row, Value rows, int64_t rank, Type elementType) {
  Value data = loadField(tensor, abi::tensor::kData, ptrType(builder));
  SmallVector<Value> sizes{rows}, strides{stride(tensor, 0)};
  for (int64_t d = 1; d < rank; ++d) {
    sizes.push_back(shape(tensor, d));
    strides.push_back(stride(tensor, d));
  }
  Value offset = arith::MulIOp::create(builder, loc, row, strides[0]);
  return makeView(builder, loc, data, offset, sizes, strides, elementType);
}

Value ABIBuilder::patternView(Value tensor, Value row, Value rows, Value context,
                              Type elementType) {
  Value data = loadField(tensor, abi::tensor::kData, ptrType(builder));
  Value rowStride = stride(tensor, 0);
  Value offset = arith::MulIOp::create(builder, loc, row, rowStride);
  return makeView(builder, loc, data, offset, {shape(tensor, 1), rows, context},
                  {stride(tensor, 1), rowStride, stride(tensor, 2)}, elementType);
}

Value ABIBuilder::view(Value tensor, int64_t rank, Type elementType) {
  Value data = loadField(tensor, abi::tensor::kData, ptrType(builder));
  SmallVector<Value> sizes, strides;
  for (int64_t d = 0; d < rank; ++d) {
    sizes.push_back(shape(tensor, d));
    strides.push_back(stride(tensor, d));
  }
  return makeView(builder, loc, data, i64(0), sizes, strides, elementType);
}

Value ABIBuilder::pointerView(Value data, ArrayRef<Value> sizes, ArrayRef<Value> strides,
                              Type elementType) {
  return makeView(builder, loc, data, i64(0), sizes, strides, elementType);
}

Value ABIBuilder::stackTensor() {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&kernel.getBody().front());
  Value one = LLVM::ConstantOp::create(builder, loc, builder.getI64Type(), 1);
  auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), abi::tensor::kSize);
  return LLVM::AllocaOp::create(builder, loc, ptrType(builder), type, one, /*alignment=*/8);
}

Value ABIBuilder::describe(Value memref, abi::DType dtype) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t rank = type.getRank();
  assert(rank <= abi::kMaxRank && "tensor rank exceeds the ABI");
  Value slot = stackTensor();
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref);
  auto toI64 = [&](Value index) {
    return arith::IndexCastOp::create(builder, loc, builder.getI64Type(), index).getResult();
  };
  Value basePtr = LLVM::IntToPtrOp::create(builder, loc, ptrType(builder), toI64(base));
  Value byteOffset =
      arith::MulIOp::create(builder, loc, toI64(metadata.getOffset()), i64(abi::dtypeSize(dtype)));
  Value data = LLVM::GEPOp::create(builder, loc, ptrType(builder), builder.getI8Type(), basePtr,
                                   ArrayRef<LLVM::GEPArg>{byteOffset});
  LLVM::StoreOp::create(builder, loc, data, fieldAddress(slot, abi::tensor::kData));
  LLVM::StoreOp::create(builder, loc, i32(static_cast<int32_t>(dtype)),
                        fieldAddress(slot, abi::tensor::kDtype));
  LLVM::StoreOp::create(builder, loc, i32(rank), fieldAddress(slot, abi::tensor::kRank));
  for (int64_t d = 0; d < abi::kMaxRank; ++d) {
    Value size = d < rank ? toI64(metadata.getSizes()[d]) : i64(1);
    Value step = d < rank ? toI64(metadata.getStrides()[d]) : i64(1);
    LLVM::StoreOp::create(builder, loc, size, fieldAddress(slot, abi::tensor::kShape + 8 * d));
    LLVM::StoreOp::create(builder, loc, step, fieldAddress(slot, abi::tensor::kStrides + 8 * d));
  }
  return slot;
}

Value ABIBuilder::callback(int64_t offset) {
  return loadField(kernelArgs.runtime, offset, ptrType(builder));
}

Value ABIBuilder::messageGlobal(StringRef message) {
  auto module = kernel->getParentOfType<ModuleOp>();
  std::string name = llvm::formatv("{0}.msg{1}", kernel.getSymName(), numMessages++).str();
  std::string text = (message + llvm::StringRef("\0", 1)).str();
  auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), text.size());
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal, name,
                           builder.getStringAttr(text));
  }
  return LLVM::AddressOfOp::create(builder, loc, ptrType(builder), name);
}

void ABIBuilder::reportError(Value request, StringRef message, ValueRange args) {
  assert(args.size() <= 2 && "report_error takes two numbers");
  Type ptr = ptrType(builder);
  Type i64 = builder.getI64Type();
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(builder.getContext()),
                                          {ptr, ptr, ptr, i64, i64});
  Value ctx = loadField(kernelArgs.runtime, abi::runtime::kCtx, ptr);
  Value fn = callback(abi::runtime::kReportError);
  Value numbers[2];
  for (int i = 0; i < 2; ++i)
    numbers[i] = i < int(args.size()) ? args[i] : LLVM::ConstantOp::create(builder, loc, i64, 0);
  LLVM::CallOp::create(
      builder, loc, type,
      ValueRange{fn, ctx, request, messageGlobal(message), numbers[0], numbers[1]});
}

void ABIBuilder::save(Value request, int32_t saveIndex, Value step, Value tensor) {
  Type ptr = ptrType(builder);
  auto type =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(builder.getContext()),
                                  {ptr, ptr, builder.getI32Type(), builder.getI64Type(), ptr});
  Value ctx = loadField(kernelArgs.runtime, abi::runtime::kCtx, ptr);
  Value fn = callback(abi::runtime::kSave);
  LLVM::CallOp::create(builder, loc, type,
                       ValueRange{fn, ctx, request, i32(saveIndex), step, tensor});
}

void ABIBuilder::requestCallback(int64_t offset, Value request) {
  Type ptr = ptrType(builder);
  auto type =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(builder.getContext()), {ptr, ptr});
  Value ctx = loadField(kernelArgs.runtime, abi::runtime::kCtx, ptr);
  LLVM::CallOp::create(builder, loc, type, ValueRange{callback(offset), ctx, request});
}

void ABIBuilder::stop(Value request) { requestCallback(abi::runtime::kStop, request); }

void ABIBuilder::finish(Value request) { requestCallback(abi::runtime::kFinish, request); }

void ABIBuilder::skip(Value request) { requestCallback(abi::runtime::kSkip, request); }

Value ABIBuilder::callModule(int32_t module, Value input, Value output) {
  Type ptr = ptrType(builder);
  auto type =
      LLVM::LLVMFunctionType::get(builder.getI32Type(), {ptr, builder.getI32Type(), ptr, ptr});
  Value ctx = loadField(kernelArgs.runtime, abi::runtime::kCtx, ptr);
  return LLVM::CallOp::create(
             builder, loc, type,
             ValueRange{callback(abi::runtime::kCallModule), ctx, i32(module), input, output})
      .getResult();
}

void ABIBuilder::returnSuccess() { func::ReturnOp::create(builder, loc, i32(0)); }

} // namespace nnsc::bundle

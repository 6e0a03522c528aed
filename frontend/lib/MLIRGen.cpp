//===- MLIRGen.cpp - nns IR from a checked AST ------------------*- C++ -*-===//
//
// The generator's types, constants, params, scopes and sites, and the mlirGen entry point
// (MLIRGenerator.h).
//
//===----------------------------------------------------------------------===//

#include "MLIRGenerator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace nnsc {
namespace mlirgen {
namespace {

nns::Phase phaseOf(schema::Phase p) {
  switch (p) {
  case schema::Phase::Forward:
    return nns::Phase::Forward;
  case schema::Phase::Logits:
    return nns::Phase::Logits;
  case schema::Phase::Samples:
    return nns::Phase::Samples;
  case schema::Phase::Result:
    return nns::Phase::Result;
  }
  return nns::Phase::Forward;
}

} // namespace

OwningOpRef<ModuleOp> Generator::program(const ast::Program &p) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToEnd(module->getBody());
  for (const ast::ParamDecl &param : p.params)
    paramDecl(param);
  for (const ast::TraceDecl &t : p.traces) {
    auto trace = nns::TraceOp::create(builder, t.loc, t.name.empty() ? "main" : t.name);
    OpBuilder::InsertionGuard guard(builder);
    builder.createBlock(&trace.getBody());
    scopes.assign(1, {});
    block(t.body);
  }
  return module;
}

Type Generator::elemType(ElemType e) {
  switch (e) {
  case ElemType::F32:
    return builder.getF32Type();
  case ElemType::I64:
    return builder.getI64Type();
  case ElemType::Bool:
    return builder.getI1Type();
  }
  return {};
}

RankedTensorType Generator::tensorType(const ValueType &t) {
  SmallVector<int64_t> shape;
  for (int64_t d : t.dims)
    shape.push_back(isTokenDim(d) ? ShapedType::kDynamic : d);
  return RankedTensorType::get(shape, elemType(t.elem));
}

RankedTensorType Generator::withElem(RankedTensorType t, Type elem) {
  return RankedTensorType::get(t.getShape(), elem);
}

Value Generator::constant(Location loc, ElemType elem, double value) {
  auto type = RankedTensorType::get({}, elemType(elem));
  Attribute attr;
  if (elem == ElemType::F32)
    attr = DenseElementsAttr::get(type, builder.getF32FloatAttr(float(value)));
  else
    attr = DenseElementsAttr::get(type, builder.getIntegerAttr(elemType(elem), int64_t(value)));
  return arith::ConstantOp::create(builder, loc, llvm::cast<TypedAttr>(attr));
}

Value Generator::castTo(Location loc, Value v, Type elem) {
  RankedTensorType t = typeOf(v);
  if (t.getElementType() == elem)
    return v;
  // A literal converts at compile time: `h = 0` on an f32 site writes 0.0.
  if (auto cst = v.getDefiningOp<arith::ConstantOp>(); cst && t.getRank() == 0) {
    auto value = llvm::cast<DenseElementsAttr>(cst.getValue());
    double d = value.getElementType().isF32() ? value.getSplatValue<APFloat>().convertToDouble()
                                              : double(value.getSplatValue<APInt>().getSExtValue());
    return constant(loc,
                    elem.isF32()        ? ElemType::F32
                    : elem.isInteger(1) ? ElemType::Bool
                                        : ElemType::I64,
                    d);
  }
  return nns::CastOp::create(builder, loc, withElem(t, elem), v);
}

void Generator::paramDecl(const ast::ParamDecl &p) {
  RankedTensorType type = tensorType(p.resolved);
  ElementsAttr init;
  if (p.init) {
    const ast::ExprSema &s = p.init->sema;
    double v = s.constantFloat ? *s.constantFloat : double(*s.constant);
    if (p.resolved.elem == ElemType::F32)
      init = DenseElementsAttr::get(type, builder.getF32FloatAttr(float(v)));
    else
      init =
          DenseElementsAttr::get(type, builder.getIntegerAttr(type.getElementType(), int64_t(v)));
  }
  paramTypes[p.name] = type;
  nns::ParamOp::create(builder, p.loc, p.name, type, init);
}

Value Generator::lookup(const std::string &name) {
  for (auto &scope : llvm::reverse(scopes))
    if (auto it = scope.find(name); it != scope.end())
      return it->second;
  return {};
}

void Generator::rebind(const std::string &name, Value v) {
  for (auto &scope : llvm::reverse(scopes))
    if (auto it = scope.find(name); it != scope.end()) {
      it->second = v;
      return;
    }
  bind(name, v);
}

nns::PhaseAttr Generator::phaseAttr(int i) {
  return nns::PhaseAttr::get(builder.getContext(), phaseOf(site(i).phase));
}

Value Generator::readSite(Location loc, int i, RankedTensorType type) {
  return nns::SiteReadOp::create(builder, loc, type, builder.getStringAttr(site(i).path),
                                 builder.getI64IntegerAttr(i), phaseAttr(i));
}

} // namespace mlirgen

OwningOpRef<ModuleOp> mlirGen(const ast::Program &program, const schema::Architecture &arch,
                              MLIRContext &context) {
  context.getOrLoadDialect<nns::NNSDialect>();
  context.getOrLoadDialect<arith::ArithDialect>();
  return mlirgen::Generator(arch, context).program(program);
}

} // namespace nnsc

//===- MLIRGenerator.h - the nns IR generator behind mlirGen ----*- C++ -*-===//
//
// Internal to the frontend. A direct walk over the annotated AST: Sema already resolved every
// path, type and constant, so each node maps to a few ops. Site ops carry the site's path,
// firing order and phase. Types, params, scopes and sites are in MLIRGen.cpp, expressions in
// MLIRGenExpr.cpp, statements in MLIRGenStmt.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_MLIRGENERATOR_H
#define NNSC_FRONTEND_MLIRGENERATOR_H

#include "nnsc/Dialect/NNS/NNSOps.h"
#include "nnsc/Frontend/MLIRGen.h"

#include "mlir/IR/Builders.h"

#include <map>

namespace nnsc {
struct ViewChain;
}

namespace nnsc::mlirgen {

using ast::Builtin;
using mlir::ArrayRef;
using mlir::IntegerAttr;
using mlir::Location;
using mlir::MLIRContext;
using mlir::ModuleOp;
using mlir::OpBuilder;
using mlir::OwningOpRef;
using mlir::RankedTensorType;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;

/// Builds the nns IR of one checked program.
class Generator {
public:
  Generator(const schema::Architecture &arch, MLIRContext &context)
      : arch(arch), builder(&context) {}

  OwningOpRef<ModuleOp> program(const ast::Program &p);

private:
  Type elemType(ElemType e);
  RankedTensorType tensorType(const ValueType &t);
  RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }
  RankedTensorType withElem(RankedTensorType t, Type elem);

  Value constant(Location loc, ElemType elem, double value);
  Value castTo(Location loc, Value v, Type elem);

  void paramDecl(const ast::ParamDecl &p);

  // Scopes mirror Sema's: a lookup walks outwards.
  Value lookup(const std::string &name);
  void bind(const std::string &name, Value v) { scopes.back()[name] = v; }
  /// Rebinds an existing name in the scope that holds it (for if-results).
  void rebind(const std::string &name, Value v);

  //===--------------------------------------------------------------------===//
  // Sites
  //===--------------------------------------------------------------------===//

  const schema::Site &site(int i) { return arch.sites()[i]; }
  nns::PhaseAttr phaseAttr(int i);
  Value readSite(Location loc, int i, RankedTensorType type);

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  Value expr(const ast::Expr &e);

  /// The index values of `x[...]`, generated once per statement.
  SmallVector<Value> subscriptValues(const std::vector<ast::Subscript> &subs);

  /// One slice entry: start, stop, stride from Sema's constants.
  std::tuple<int64_t, IntegerAttr, int64_t> sliceBounds(const ast::Subscript &sub);

  /// `base[subs[i:]]`, where `dim` is the dimension subs[i] applies to.
  Value extract(Value base, const std::vector<ast::Subscript> &subs, ArrayRef<Value> indices,
                size_t i, int64_t dim);

  /// `dest` with `dest[subs[i:]] = value`.
  Value scatter(Location loc, Value dest, const std::vector<ast::Subscript> &subs,
                ArrayRef<Value> indices, size_t i, int64_t dim, Value value);

  Value extractOne(Value base, const ast::Subscript &sub, Value index, int64_t dim);

  Value binaryOp(Location loc, nns::BinaryKind kind, Value a, Value b, Type elem);

  /// `x` in the shape of `type` (its element type kept); no op when the shapes agree.
  Value reshape(Location loc, Value x, RankedTensorType type);

  /// `x` with a new dimension of size 1 at `dim`.
  Value unsqueeze(Location loc, Value x, int64_t dim);

  /// A reduction with torch's meaning: over `s.intArg` or every dimension, keepdim or not.
  Value reduction(Location loc, const ast::ExprSema &s, nns::ReduceKind kind, Value x, Type inElem);

  /// A constant of zeros (false) of a static shape.
  Value zeros(Location loc, ArrayRef<int64_t> shape, Type elem);

  /// cat / stack: each value written with a slice_scatter into zeros of the result's shape.
  Value join(const ast::CallExpr &e, const ast::ListExpr &list, RankedTensorType result);

  Value binary(const ast::BinaryExpr &e);

  Value call(const ast::CallExpr &e);

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  void block(const ast::Block &b);

  void stmt(const ast::Stmt &s);

  nns::BinaryKind binaryKindOf(ast::AssignOp op);

  void assign(const ast::AssignStmt &a);

  /// `SITE.view(...)[IDX] op= v`: the site read, viewed, updated, unviewed and written whole.
  void assignThroughView(const ast::AssignStmt &a, const ViewChain &chain,
                         const std::vector<ast::Subscript> *subs);

  /// For `op=`, the part combined with `v`; for `=`, `v` itself.
  Value updated(Location loc, ast::AssignOp op, llvm::function_ref<Value()> part, Value v);

  void exprStmt(const ast::ExprStmt &s);

  void ifStmt(const ast::IfStmt &s);

  void forStmt(const ast::ForStmt &s);

  void invoke(const ast::InvokeStmt &s);

  const schema::Architecture &arch;
  OpBuilder builder;
  std::vector<std::map<std::string, Value>> scopes;
  std::map<std::string, RankedTensorType> paramTypes;
};

} // namespace nnsc::mlirgen

#endif // NNSC_FRONTEND_MLIRGENERATOR_H

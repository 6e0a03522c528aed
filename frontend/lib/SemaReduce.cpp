//===- SemaReduce.cpp - checks of reductions --------------------*- C++ -*-===//
//
// Reductions have torch's meaning (docs/LanguageSpec.md v2): `x.sum(dim)` removes `dim`, `x.sum()`
// reduces every dimension to a scalar, and `keepdim=True` keeps the reduced dimensions with
// size 1. `argmax()` without a dim is the index into the flattened value, as in torch.
//
//===----------------------------------------------------------------------===//

#include "Checker.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;

FailureOr<bool> Checker::constantBool(ast::Expr &e, StringRef what) {
  Avail ignored;
  if (failed(value(e, ignored)))
    return failure();
  if (!e.sema.constant || e.sema.type.elem != ElemType::Bool) {
    emitError(e.loc()) << what << " must be True or False";
    return failure();
  }
  return *e.sema.constant != 0;
}

FailureOr<int64_t> Checker::dimIndex(ast::Expr &e, int64_t rank, const ValueType &x) {
  FailureOr<int64_t> v = constantInt(e, "'dim'");
  if (failed(v))
    return failure();
  if (*v < -rank || *v >= rank) {
    emitError(e.loc()) << "dim " << *v << " is out of range for a value of type " << x.str();
    return failure();
  }
  return *v < 0 ? *v + rank : *v;
}

LogicalResult Checker::reduction(ast::CallExpr &e, Builtin fn, std::vector<ast::Expr *> &pos,
                                 std::map<std::string, ast::Expr *> &kw, Avail &avail) {
  const char *fnName = builtinName(fn);
  bool method = e.callee->sema.entity == ast::Entity::Method;
  for (auto &[k, v] : kw) {
    if (k != "dim" && k != "keepdim") {
      emitError(v->loc()) << "'" << fnName << "' has no argument '" << k << "'";
      return failure();
    }
  }
  ast::Expr *dimExpr = pos.size() > 1 ? pos[1] : (kw.count("dim") ? kw["dim"] : nullptr);
  ast::Expr *keepExpr = pos.size() > 2 ? pos[2] : (kw.count("keepdim") ? kw["keepdim"] : nullptr);
  if (pos.size() > 3 || (pos.size() > 1 && kw.count("dim")) ||
      (pos.size() > 2 && kw.count("keepdim"))) {
    emitError(e.loc()) << "'" << fnName << "' takes a dim and keepdim"
                       << (method ? "" : " besides the value") << "; got "
                       << pos.size() - (method ? 1 : 0) + kw.size() << " arguments";
    return failure();
  }
  if (pos.empty()) {
    emitError(e.loc()) << "'" << fnName << "' needs a value, as in '" << fnName << "(x, -1)'";
    return failure();
  }
  if (failed(value(*pos[0], avail)))
    return failure();
  const ValueType x = pos[0]->sema.type;
  e.sema.entity = ast::Entity::Value;
  e.sema.builtin = fn;
  if (keepExpr) {
    FailureOr<bool> keep = constantBool(*keepExpr, "'keepdim'");
    if (failed(keep))
      return failure();
    e.sema.keepDim = *keep;
  }
  e.sema.type = x;
  if (dimExpr) {
    FailureOr<int64_t> dim = dimIndex(*dimExpr, x.dims.size(), x);
    if (failed(dim))
      return failure();
    e.sema.intArg = *dim;
    if (e.sema.keepDim)
      e.sema.type.dims[*dim] = 1;
    else
      e.sema.type.dims.erase(e.sema.type.dims.begin() + *dim);
  } else {
    e.sema.allDims = true;
    for (int64_t &d : e.sema.type.dims)
      d = 1;
    if (!e.sema.keepDim)
      e.sema.type.dims.clear();
  }
  if (fn == Builtin::ArgMax || fn == Builtin::ArgMin)
    e.sema.type.elem = ElemType::I64;
  else if (fn == Builtin::Mean || fn == Builtin::Norm)
    e.sema.type.elem = ElemType::F32;
  else if (x.elem == ElemType::Bool)
    e.sema.type.elem = ElemType::I64;
  return success();
}

} // namespace nnsc

//===- SemaIndex.cpp - checks of indexing and operators ---------*- C++ -*-===//

#include "Checker.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace nnsc {

using ast::Entity;

LogicalResult Checker::index(ast::IndexExpr &e, Avail &avail) {
  if (failed(expr(*e.base, avail)))
    return failure();
  ast::ExprSema &base = e.base->sema;
  if (base.entity == Entity::Layers) {
    if (e.subscripts.size() != 1 || e.subscripts[0].kind != ast::Subscript::Kind::Index) {
      if (!e.subscripts.empty() && e.subscripts[0].kind == ast::Subscript::Kind::Wildcard)
        emitError(e.loc()) << "'*' (every layer) is only allowed in cache(...)";
      else
        emitError(e.loc()) << "index one layer, as in 'layers[3]'";
      return failure();
    }
    FailureOr<int64_t> layer = constantInt(*e.subscripts[0].index, "a layer index");
    if (failed(layer))
      return failure();
    int64_t n = arch.config().layers;
    if (*layer < -n || *layer >= n) {
      emitError(e.subscripts[0].loc)
          << "layer index " << *layer << " is out of range: the model has " << n << " layers (0.."
          << n - 1 << ", or -" << n << "..-1)";
      return failure();
    }
    int64_t i = *layer < 0 ? *layer + n : *layer;
    e.sema.entity = Entity::Module;
    e.sema.module = arch.findModule("model.layers." + std::to_string(i));
    return success();
  }
  if (base.entity == Entity::Module) {
    emitError(e.loc()) << describe(*e.base)
                       << " cannot be indexed; index one of its sites, as in '.output[-1]'";
    return failure();
  }
  if (base.entity == Entity::Steps) {
    emitError(e.loc()) << "'steps' can only be iterated, as in 'for step in steps[0:5]'";
    return failure();
  }
  if (failed(value(*e.base, avail)))
    return failure();
  FailureOr<ValueType> type = indexType(e.base->sema.type, e.subscripts, e.loc(), avail);
  if (failed(type))
    return failure();
  e.sema.entity = Entity::Value;
  e.sema.type = *type;
  return success();
}

FailureOr<ValueType> Checker::indexType(const ValueType &base,
                                        std::vector<ast::Subscript> &subscripts, Location loc,
                                        Avail &avail) {
  ValueType type = base;
  size_t dim = 0;
  for (ast::Subscript &sub : subscripts) {
    if (sub.kind == ast::Subscript::Kind::NewAxis) {
      // `None` inserts a dimension of size 1 here; the next subscript applies after it.
      type.dims.insert(type.dims.begin() + dim, 1);
      ++dim;
      continue;
    }
    if (dim >= type.dims.size()) {
      emitError(sub.loc) << "too many indices for a value of type " << base.str() << " ("
                         << base.dims.size() << " dimensions)";
      return failure();
    }
    int64_t size = type.dims[dim];
    switch (sub.kind) {
    case ast::Subscript::Kind::Wildcard:
      emitError(sub.loc) << "'*' (every layer) is only allowed in cache(...)";
      return failure();
    case ast::Subscript::Kind::NewAxis:
      break;
    case ast::Subscript::Kind::Index: {
      if (failed(value(*sub.index, avail)))
        return failure();
      const ast::ExprSema &idx = sub.index->sema;
      if (idx.type.elem != ElemType::I64 || !idx.type.isScalar()) {
        emitError(sub.loc) << "an index must be an i64 scalar; got " << idx.type.str();
        return failure();
      }
      if (idx.constant && size >= 0 && (*idx.constant < -size || *idx.constant >= size)) {
        emitError(sub.loc) << "index " << *idx.constant << " is out of range for dimension " << dim
                           << " of size " << size;
        return failure();
      }
      type.dims.erase(type.dims.begin() + dim);
      break;
    }
    case ast::Subscript::Kind::Slice: {
      int64_t bounds[3] = {0, 0, 1};
      ast::Expr *parts[3] = {sub.lo.get(), sub.hi.get(), sub.stride.get()};
      for (int i = 0; i < 3; ++i) {
        if (!parts[i])
          continue;
        FailureOr<int64_t> v = constantInt(*parts[i], "a slice bound");
        if (failed(v))
          return failure();
        bounds[i] = *v;
      }
      if (bounds[2] < 1) {
        emitError(sub.loc) << "slice step must be positive";
        return failure();
      }
      bool whole = bounds[0] == 0 && !parts[1] && bounds[2] == 1;
      if (size >= 0) {
        auto clampIndex = [size](int64_t i) {
          return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size);
        };
        int64_t lo = clampIndex(bounds[0]), hi = parts[1] ? clampIndex(bounds[1]) : size;
        type.dims[dim] = hi <= lo ? 0 : (hi - lo + bounds[2] - 1) / bounds[2];
      } else if (!whole) {
        type.dims[dim] = kSlicedTokens;
      }
      ++dim;
      break;
    }
    }
  }
  return type;
}

LogicalResult Checker::unary(ast::UnaryExpr &e, Avail &avail) {
  if (failed(value(*e.operand, avail)))
    return failure();
  const ast::ExprSema &x = e.operand->sema;
  e.sema.entity = Entity::Value;
  e.sema.type = x.type;
  if (e.op == ast::UnaryOp::Not) {
    if (x.type.elem != ElemType::Bool) {
      emitError(e.loc()) << "'not' needs a bool operand; got " << x.type.str();
      return failure();
    }
    if (x.constant)
      e.sema.constant = !*x.constant;
    return success();
  }
  if (x.type.elem == ElemType::Bool) {
    emitError(e.loc()) << "unary '-' needs a number; got " << x.type.str();
    return failure();
  }
  if (x.constant) {
    if (*x.constant == std::numeric_limits<int64_t>::min()) {
      emitError(e.loc()) << "integer overflow in unary '-'";
      return failure();
    }
    e.sema.constant = -*x.constant;
  }
  if (x.constantFloat)
    e.sema.constantFloat = -*x.constantFloat;
  return success();
}

LogicalResult Checker::binary(ast::BinaryExpr &e, Avail &avail) {
  if (failed(value(*e.lhs, avail)) || failed(value(*e.rhs, avail)))
    return failure();
  const ValueType &l = e.lhs->sema.type, &r = e.rhs->sema.type;
  e.sema.entity = Entity::Value;
  using Op = ast::BinaryOp;
  if (e.op == Op::MatMul) {
    if (l.dims.empty() || l.dims.size() > 2 || r.dims.empty() || r.dims.size() > 2) {
      emitError(e.loc()) << "'@' needs 1-D or 2-D operands; got " << l.str() << " @ " << r.str();
      return failure();
    }
    if (l.elem == ElemType::Bool || r.elem == ElemType::Bool) {
      emitError(e.loc()) << "'@' needs numbers; got " << l.str() << " @ " << r.str();
      return failure();
    }
    if (l.dims.back() != r.dims.front()) {
      emitError(e.loc()) << "shape mismatch in '@': " << l.shapeStr() << " @ " << r.shapeStr()
                         << " contracts dimensions of different sizes";
      return failure();
    }
    e.sema.type.elem = ElemType::F32;
    if (l.dims.size() == 2)
      e.sema.type.dims.push_back(l.dims[0]);
    if (r.dims.size() == 2)
      e.sema.type.dims.push_back(r.dims[1]);
    return success();
  }
  std::optional<llvm::SmallVector<int64_t, 4>> shape = broadcast(l.dims, r.dims);
  if (!shape) {
    emitError(e.loc()) << "shape mismatch: " << l.str() << " and " << r.str()
                       << " do not broadcast in '" << ast::spelling(e.op) << "'";
    return failure();
  }
  e.sema.type.dims = *shape;
  std::optional<int64_t> lc = e.lhs->sema.constant, rc = e.rhs->sema.constant;
  bool logical = e.op == Op::And || e.op == Op::Or;
  if (logical) {
    if (l.elem != ElemType::Bool || r.elem != ElemType::Bool) {
      emitError(e.loc()) << "'" << ast::spelling(e.op) << "' needs bool operands; got " << l.str()
                         << " and " << r.str();
      return failure();
    }
    e.sema.type.elem = ElemType::Bool;
    if (lc && rc)
      e.sema.constant = e.op == Op::And ? (*lc && *rc) : (*lc || *rc);
    return success();
  }
  bool compare = e.op >= Op::Lt && e.op <= Op::Ne;
  if (!compare && (l.elem == ElemType::Bool || r.elem == ElemType::Bool)) {
    emitError(e.loc()) << "'" << ast::spelling(e.op) << "' needs numbers; got " << l.str()
                       << " and " << r.str();
    return failure();
  }
  ElemType common = promote(l.elem, r.elem);
  e.sema.type.elem = compare ? ElemType::Bool : (e.op == Op::Div ? ElemType::F32 : common);
  bool ints = l.elem != ElemType::F32 && r.elem != ElemType::F32;
  if (e.op == Op::FloorDiv || e.op == Op::Mod) {
    // Compile-time integer arithmetic only (sizes, indices, loop bounds): `//` and `%` have no
    // run-time kernels.
    for (ast::Expr *operand : {e.lhs.get(), e.rhs.get()}) {
      if (!isIntConstant(*operand)) {
        InFlightDiagnostic diag = emitError(operand->loc())
                                  << "'" << ast::spelling(e.op)
                                  << "' takes integer constants, as in 'hidden // 2'";
        explainNotConstant(*operand, diag);
        return failure();
      }
    }
    if (*rc == 0) {
      emitError(e.loc()) << "division by zero in '" << *lc << " " << ast::spelling(e.op) << " 0'";
      return failure();
    }
  }
  int64_t folded = 0;
  bool overflow = false;
  if (lc && rc && ints) {
    switch (e.op) {
    case Op::Add:
      overflow = llvm::AddOverflow(*lc, *rc, folded);
      e.sema.constant = folded;
      break;
    case Op::Sub:
      overflow = llvm::SubOverflow(*lc, *rc, folded);
      e.sema.constant = folded;
      break;
    case Op::Mul:
      overflow = llvm::MulOverflow(*lc, *rc, folded);
      e.sema.constant = folded;
      break;
    case Op::FloorDiv: {
      // Python's `//`: the quotient rounded toward negative infinity.
      overflow = *lc == std::numeric_limits<int64_t>::min() && *rc == -1;
      int64_t q = overflow ? 0 : *lc / *rc;
      if (!overflow && *lc % *rc != 0 && (*lc < 0) != (*rc < 0))
        --q;
      e.sema.constant = q;
      break;
    }
    case Op::Mod: {
      // Python's `%`: the remainder has the sign of the divisor.
      int64_t m = *rc == -1 ? 0 : *lc % *rc;
      if (m != 0 && (m < 0) != (*rc < 0))
        m += *rc;
      e.sema.constant = m;
      break;
    }
    case Op::Lt:
      e.sema.constant = *lc < *rc;
      break;
    case Op::Le:
      e.sema.constant = *lc <= *rc;
      break;
    case Op::Gt:
      e.sema.constant = *lc > *rc;
      break;
    case Op::Ge:
      e.sema.constant = *lc >= *rc;
      break;
    case Op::Eq:
      e.sema.constant = *lc == *rc;
      break;
    case Op::Ne:
      e.sema.constant = *lc != *rc;
      break;
    default:
      break;
    }
  }
  if (overflow) {
    emitError(e.loc()) << "integer overflow in '" << *lc << " " << ast::spelling(e.op) << " " << *rc
                       << "'";
    return failure();
  }
  return success();
}

} // namespace nnsc

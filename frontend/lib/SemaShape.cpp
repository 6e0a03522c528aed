//===- SemaShape.cpp - checks of shape operations ---------------*- C++ -*-===//
//
// unsqueeze, view/reshape, transpose, outer, expand/broadcast_to, cat and stack, with PyTorch's
// names and meanings.
// Shapes stay static where they can: a view whose sizes cannot match is an error that names
// both shapes. The token dimension T is known only at run time, so a view of a value with T
// needs one `-1`; when the other sizes multiply to the same count, the `-1` is that T again
// (it still broadcasts against the site), otherwise it is a run-time size `?`.
//
//===----------------------------------------------------------------------===//

#include "Checker.h"
#include "Suggest.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;

namespace {

std::string sizesText(llvm::ArrayRef<int64_t> sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + ")";
}

} // namespace

FailureOr<int64_t> Checker::shapeSize(ast::Expr &e) {
  // A name that is no value, a model dimension (`heads`, `head_dim`, ...) or a language name
  // gets the list of sizes a name can be.
  std::map<std::string, int64_t> names = arch.dimensionNames();
  if (auto *n = dyn_cast<ast::NameExpr>(&e);
      n && !lookup(n->name) && !params.count(n->name) && !names.count(n->name)) {
    std::vector<std::string> candidates;
    for (auto &[name, size] : names)
      candidates.push_back(name);
    emitError(e.loc()) << "unknown size '" << n->name
                       << "'; a size is an integer or a model dimension name (hidden, vocab, "
                          "heads, kv_heads, head_dim, intermediate, layers)"
                       << didYouMean(n->name, candidates);
    return failure();
  }
  return constantInt(e, "a size");
}

LogicalResult Checker::shapeBuiltin(ast::CallExpr &e, Builtin fn, std::vector<ast::Expr *> &pos,
                                    std::map<std::string, ast::Expr *> &kw, Avail &avail) {
  const char *fnName = builtinName(fn);
  auto noKeywords = [&](std::initializer_list<const char *> allowed) {
    for (auto &[k, v] : kw) {
      if (llvm::none_of(allowed, [&](const char *a) { return k == a; })) {
        emitError(v->loc()) << "'" << fnName << "' has no argument '" << k << "'";
        return false;
      }
    }
    return true;
  };
  if (pos.empty()) {
    emitError(e.loc()) << "'" << fnName << "' needs a value";
    return failure();
  }
  if (failed(value(*pos[0], avail)))
    return failure();
  const ValueType x = pos[0]->sema.type;
  int64_t rank = x.dims.size();
  e.sema.entity = ast::Entity::Value;
  e.sema.builtin = fn;
  e.sema.type = x;
  switch (fn) {
  case Builtin::Unsqueeze: {
    ast::Expr *d = pos.size() > 1 ? pos[1] : (kw.count("dim") ? kw["dim"] : nullptr);
    if (!noKeywords({"dim"}) || !d || pos.size() + kw.size() != 2) {
      if (!d || pos.size() + kw.size() != 2)
        emitError(e.loc()) << "'unsqueeze' takes one dim, as in 'x.unsqueeze(-1)'";
      return failure();
    }
    FailureOr<int64_t> dim = dimIndex(*d, rank + 1, x);
    if (failed(dim))
      return failure();
    e.sema.intArg = *dim;
    e.sema.type.dims.insert(e.sema.type.dims.begin() + *dim, 1);
    return success();
  }
  case Builtin::Transpose: {
    if (!noKeywords({"dim0", "dim1"}))
      return failure();
    ast::Expr *a = pos.size() > 1 ? pos[1] : (kw.count("dim0") ? kw["dim0"] : nullptr);
    ast::Expr *b = pos.size() > 2 ? pos[2] : (kw.count("dim1") ? kw["dim1"] : nullptr);
    if (!a || !b || pos.size() + kw.size() != 3) {
      emitError(e.loc()) << "'transpose' takes two dims, as in 'x.transpose(0, 1)'";
      return failure();
    }
    FailureOr<int64_t> d0 = dimIndex(*a, rank, x);
    if (failed(d0))
      return failure();
    FailureOr<int64_t> d1 = dimIndex(*b, rank, x);
    if (failed(d1))
      return failure();
    e.sema.intArg = *d0;
    e.sema.intArg2 = *d1;
    std::swap(e.sema.type.dims[*d0], e.sema.type.dims[*d1]);
    return success();
  }
  case Builtin::Outer: {
    if (pos.size() != 2 || !kw.empty()) {
      emitError(e.loc()) << "'outer' takes two 1-d values, as in 'outer(a, b)'";
      return failure();
    }
    if (failed(value(*pos[1], avail)))
      return failure();
    const ValueType &y = pos[1]->sema.type;
    if (x.dims.size() != 1 || y.dims.size() != 1 || x.elem == ElemType::Bool ||
        y.elem == ElemType::Bool) {
      emitError(e.loc()) << "'outer' needs two 1-d tensors of numbers; got " << x.str() << " and "
                         << y.str();
      return failure();
    }
    e.sema.type = {promote(x.elem, y.elem), {x.dims[0], y.dims[0]}};
    return success();
  }
  case Builtin::View:
  case Builtin::Reshape:
  case Builtin::Expand:
  case Builtin::BroadcastTo:
    break;
  default:
    llvm_unreachable("not a shape builtin");
  }
  if (!noKeywords({}))
    return failure();
  // view/reshape/expand take the sizes written out; broadcast_to takes one tuple or list.
  std::vector<ast::Expr *> sizeExprs(pos.begin() + 1, pos.end());
  if (fn == Builtin::BroadcastTo) {
    auto *shape = pos.size() == 2 ? dyn_cast<ast::ListExpr>(pos[1]) : nullptr;
    if (!shape) {
      emitError(e.loc()) << "'broadcast_to' takes one shape, a tuple or list of sizes, as in "
                            "'x.broadcast_to((2, hidden))'";
      return failure();
    }
    sizeExprs.clear();
    for (ast::ExprPtr &item : shape->items)
      sizeExprs.push_back(item.get());
  } else if (sizeExprs.empty()) {
    emitError(e.loc()) << "'" << fnName << "' needs sizes, as in 'h." << fnName
                       << "(-1, heads, head_dim)'";
    return failure();
  }
  std::vector<int64_t> sizes;
  for (ast::Expr *sizeExpr : sizeExprs) {
    FailureOr<int64_t> size = shapeSize(*sizeExpr);
    if (failed(size))
      return failure();
    if (*size < -1) {
      emitError(sizeExpr->loc()) << "size " << *size << " is negative; only -1 is allowed";
      return failure();
    }
    sizes.push_back(*size);
  }
  if (fn == Builtin::Expand || fn == Builtin::BroadcastTo) {
    // As torch.expand (which torch.broadcast_to is): new dimensions go in front; -1 keeps a
    // size; a size 1 stretches.
    const char *verb = fn == Builtin::Expand ? "expand" : "broadcast";
    if (sizes.size() < size_t(rank)) {
      emitError(e.loc()) << "'" << fnName << "' of a value of type " << x.str() << " to "
                         << sizesText(sizes) << ": fewer sizes than dimensions";
      return failure();
    }
    size_t lead = sizes.size() - rank;
    e.sema.type.dims.clear();
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t have = i < lead ? 1 : x.dims[i - lead];
      int64_t want = sizes[i];
      if (want == -1 && i < lead) {
        emitError(e.loc()) << "'" << fnName << "' to " << sizesText(sizes)
                           << ": -1 is not allowed for a new leading dimension";
        return failure();
      }
      if (want == -1 || want == have) {
        e.sema.type.dims.push_back(have);
      } else if (have == 1) {
        e.sema.type.dims.push_back(want);
      } else {
        emitError(e.loc()) << "shape mismatch: cannot " << verb << " a value of type " << x.str()
                           << " to " << sizesText(sizes) << "; only dimensions of size 1 stretch";
        return failure();
      }
    }
    return success();
  }
  // view / reshape.
  int64_t staticIn = 1, dynamicIn = 0, dynamicDim = 0;
  for (int64_t d : x.dims) {
    if (d < 0) {
      ++dynamicIn;
      dynamicDim = d;
    } else {
      staticIn *= d;
    }
  }
  int64_t staticOut = 1, wild = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] != -1) {
      staticOut *= sizes[i];
      continue;
    }
    if (wild >= 0) {
      emitError(e.loc()) << "'" << fnName << "' takes at most one -1; got " << sizesText(sizes);
      return failure();
    }
    wild = i;
  }
  auto mismatch = [&](const char *why) {
    emitError(e.loc()) << "shape mismatch: cannot " << fnName << " a value of type " << x.str()
                       << " as " << sizesText(sizes) << ": " << why;
    return failure();
  };
  e.sema.type.dims.assign(sizes.begin(), sizes.end());
  if (wild < 0) {
    if (dynamicIn)
      return mismatch("the token count is known only at run time; give its dimension as -1");
    if (staticIn != staticOut)
      return mismatch("the element counts differ");
    return success();
  }
  if (staticOut == 0 || staticIn % staticOut != 0)
    return mismatch("the sizes do not divide the element count");
  if (!dynamicIn)
    e.sema.type.dims[wild] = staticIn / staticOut;
  else if (dynamicIn == 1 && staticIn == staticOut)
    e.sema.type.dims[wild] = dynamicDim; // the same T (or `?`) as the input's
  else
    e.sema.type.dims[wild] = kSlicedTokens;
  return success();
}

LogicalResult Checker::joinBuiltin(ast::CallExpr &e, Builtin fn, std::vector<ast::Expr *> &pos,
                                   std::map<std::string, ast::Expr *> &kw, Avail &avail) {
  const char *fnName = builtinName(fn);
  for (auto &[k, v] : kw) {
    if (k != "dim") {
      emitError(v->loc()) << "'" << fnName << "' has no argument '" << k << "'";
      return failure();
    }
  }
  auto *list = pos.empty() ? nullptr : dyn_cast<ast::ListExpr>(pos[0]);
  if (!list || pos.size() > 2 || (pos.size() == 2 && kw.count("dim"))) {
    emitError(e.loc()) << "'" << fnName << "' takes a list of values and a dim, as in '" << fnName
                       << "([a, b], dim=0)'";
    return failure();
  }
  if (list->items.empty()) {
    emitError(list->loc()) << "'" << fnName << "' of an empty " << (list->tuple ? "tuple" : "list")
                           << "; it needs at least one value";
    return failure();
  }
  for (ast::ExprPtr &item : list->items)
    if (failed(value(*item, avail)))
      return failure();
  const ValueType &x = list->items[0]->sema.type;
  int64_t rank = x.dims.size();
  ElemType elem = x.elem;
  for (ast::ExprPtr &item : list->items)
    elem = promote(elem, item->sema.type.elem);
  // As torch.stack: every value has the same shape; torch.cat: the same rank (at least 1).
  bool stack = fn == Builtin::Stack;
  if (!stack && rank == 0) {
    emitError(list->items[0]->loc())
        << "'cat' of a value of type " << x.str() << ": a 0-d value cannot be concatenated; "
        << "use 'stack'";
    return failure();
  }
  ast::Expr *dimExpr = pos.size() > 1 ? pos[1] : (kw.count("dim") ? kw["dim"] : nullptr);
  int64_t dim = 0;
  if (dimExpr) {
    FailureOr<int64_t> d = dimIndex(*dimExpr, stack ? rank + 1 : rank, x);
    if (failed(d))
      return failure();
    dim = *d;
  }
  auto sizeText = [](int64_t d) {
    return d == kSlicedTokens    ? std::string("?")
           : d == kContextTokens ? std::string("S")
           : isTokenDim(d)       ? std::string("T")
                                 : std::to_string(d);
  };
  ValueType result{elem, x.dims};
  for (size_t i = 1; i < list->items.size(); ++i) {
    const ValueType &y = list->items[i]->sema.type;
    auto mismatch = [&]() -> InFlightDiagnostic {
      InFlightDiagnostic diag = emitError(list->items[i]->loc());
      diag << "shape mismatch: '" << fnName << "' of " << x.str() << " and " << y.str() << " ";
      return diag;
    };
    if (y.dims.size() != x.dims.size()) {
      mismatch() << "(value " << i << "): the values have different numbers of dimensions";
      return failure();
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (x.dims[d] == y.dims[d] || (!stack && d == dim))
        continue;
      mismatch() << "(value " << i << "): sizes " << sizeText(x.dims[d]) << " and "
                 << sizeText(y.dims[d]) << " differ in dim " << d
                 << (stack ? "; 'stack' needs values of one shape"
                           : "; 'cat' needs equal sizes except in the dim it joins");
      return failure();
    }
  }
  if (stack) {
    result.dims.insert(result.dims.begin() + dim, list->items.size());
  } else if (list->items.size() > 1) {
    // Offsets along the joined dim are compile-time constants, so its sizes must be fixed. A
    // cat along T would be torch's [T + T, ...]: a run-time size this compiler does not track.
    int64_t total = 0;
    for (ast::ExprPtr &item : list->items) {
      int64_t size = item->sema.type.dims[dim];
      if (size < 0) {
        emitError(item->loc()) << "'cat' along dim " << dim << " of a value of type "
                               << item->sema.type.str() << ": its size there (" << sizeText(size)
                               << ") is known only at run time; 'cat' joins along a dimension "
                                  "of fixed size (for tokens, slice or stack instead)";
        return failure();
      }
      total += size;
    }
    result.dims[dim] = total;
  }
  e.sema.entity = ast::Entity::Value;
  e.sema.builtin = fn;
  e.sema.intArg = dim;
  e.sema.type = result;
  return success();
}

} // namespace nnsc

//===- SemaShape.cpp - checks of shape operations ---------------*- C++ -*-===//
//
// unsqueeze, view/reshape, transpose, outer and expand, with PyTorch's names and meanings.
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
  // A model dimension name (`heads`, `head_dim`, ...) unless a local or param shadows it.
  if (auto *n = dyn_cast<ast::NameExpr>(&e); n && !lookup(n->name) && !params.count(n->name)) {
    std::map<std::string, int64_t> names = arch.dimensionNames();
    if (auto it = names.find(n->name); it != names.end()) {
      e.sema.entity = ast::Entity::Value;
      e.sema.type = {ElemType::I64, {}};
      e.sema.constant = it->second;
      checked.try_emplace(&e, Avail{});
      return it->second;
    }
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
    break;
  default:
    llvm_unreachable("not a shape builtin");
  }
  if (!noKeywords({}))
    return failure();
  if (pos.size() < 2) {
    emitError(e.loc()) << "'" << fnName << "' needs sizes, as in 'h." << fnName
                       << "(-1, heads, head_dim)'";
    return failure();
  }
  std::vector<int64_t> sizes;
  for (size_t i = 1; i < pos.size(); ++i) {
    FailureOr<int64_t> size = shapeSize(*pos[i]);
    if (failed(size))
      return failure();
    if (*size < -1) {
      emitError(pos[i]->loc()) << "size " << *size << " is negative; only -1 is allowed";
      return failure();
    }
    sizes.push_back(*size);
  }
  if (fn == Builtin::Expand) {
    // As torch.expand: new dimensions go in front; -1 keeps a size; a size 1 stretches.
    if (sizes.size() < size_t(rank)) {
      emitError(e.loc()) << "'expand' of a value of type " << x.str() << " to "
                         << sizesText(sizes) << ": fewer sizes than dimensions";
      return failure();
    }
    size_t lead = sizes.size() - rank;
    e.sema.type.dims.clear();
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t have = i < lead ? 1 : x.dims[i - lead];
      int64_t want = sizes[i];
      if (want == -1 && i < lead) {
        emitError(e.loc()) << "'expand' to " << sizesText(sizes) << ": -1 is not allowed for a new "
                           << "leading dimension";
        return failure();
      }
      if (want == -1 || want == have) {
        e.sema.type.dims.push_back(have);
      } else if (have == 1) {
        e.sema.type.dims.push_back(want);
      } else {
        emitError(e.loc()) << "shape mismatch: cannot expand a value of type " << x.str() << " to "
                           << sizesText(sizes) << "; only dimensions of size 1 stretch";
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

} // namespace nnsc

//===- SemaCall.cpp - checks of calls and site patterns ---------*- C++ -*-===//

#include "Checker.h"
#include "Suggest.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;
using ast::Entity;

LogicalResult Checker::call(ast::CallExpr &e, Avail &avail) {
  if (auto *m = dyn_cast<ast::MemberExpr>(e.callee.get()); m && m->member == "save") {
    emitError(e.loc()) << "'.save()' must be the whole right-hand side of a binding, as in "
                          "'x = EXPR.save()'; the name is what the request gets back";
    return failure();
  }
  if (failed(expr(*e.callee, avail)))
    return failure();
  const ast::ExprSema &callee = e.callee->sema;
  switch (callee.entity) {
  case Entity::Module:
    return moduleCall(e, callee.module, avail);
  case Entity::Function:
    return builtin(e, callee.builtin, nullptr, avail);
  case Entity::Method:
    if (callee.builtin == Builtin::Skip) {
      emitError(e.loc()) << "'.skip(...)' is a statement; it has no value";
      return failure();
    }
    return builtin(e, callee.builtin, cast<ast::MemberExpr>(*e.callee).base.get(), avail);
  case Entity::Layers:
    emitError(e.loc()) << "'model.layers' cannot be called; call one of its modules";
    return failure();
  default:
    emitError(e.loc()) << "a " << describe(*e.callee) << " cannot be called";
    return failure();
  }
}

LogicalResult Checker::moduleCall(ast::CallExpr &e, int module, Avail &avail) {
  const schema::Module &m = arch.modules()[module];
  if (!m.callable || m.inputSite < 0) {
    emitError(e.loc()) << "module '" << m.path << "' (" << m.type
                       << ") cannot be applied to a value; call a norm, projection, MLP or "
                          "lm_head";
    return failure();
  }
  if (e.args.size() != 1 || !e.args[0].keyword.empty()) {
    emitError(e.loc()) << "module '" << m.path << "' takes one value";
    return failure();
  }
  ast::Expr &arg = *e.args[0].value;
  if (failed(value(arg, avail)))
    return failure();
  const schema::Site &in = arch.sites()[m.inputSite], &out = arch.sites()[m.outputSite];
  auto trailing = [](const schema::Site &s) {
    llvm::SmallVector<int64_t, 4> dims;
    for (int64_t d : s.shape)
      if (d != schema::kTokens)
        dims.push_back(d);
    return dims;
  };
  llvm::SmallVector<int64_t, 4> want = trailing(in);
  const ValueType &x = arg.sema.type;
  ElemType wantElem = in.elementType == schema::ElementType::F32 ? ElemType::F32 : ElemType::I64;
  bool shapeOk = x.dims.size() >= want.size() && llvm::ArrayRef<int64_t>(x.dims).take_back(
                                                     want.size()) == llvm::ArrayRef<int64_t>(want);
  if (!shapeOk || (wantElem == ElemType::I64 && x.elem != ElemType::I64) ||
      (wantElem == ElemType::F32 && x.elem == ElemType::Bool)) {
    ValueType expected{wantElem, want};
    emitError(arg.loc()) << "shape mismatch: module '" << m.path << "' takes values of type "
                         << elemTypeName(wantElem) << "[..." << (want.empty() ? "" : ", ")
                         << expected.shapeStr().substr(1) << " in its last dimensions; got "
                         << x.str();
    return failure();
  }
  e.sema.entity = Entity::Value;
  e.sema.module = module;
  e.sema.type.elem = out.elementType == schema::ElementType::F32 ? ElemType::F32 : ElemType::I64;
  e.sema.type.dims.assign(x.dims.begin(), x.dims.end() - want.size());
  llvm::append_range(e.sema.type.dims, trailing(out));
  return success();
}

LogicalResult Checker::builtin(ast::CallExpr &e, Builtin fn, ast::Expr *receiver, Avail &avail) {
  std::vector<ast::Expr *> pos;
  if (receiver)
    pos.push_back(receiver);
  std::map<std::string, ast::Expr *> kw;
  for (ast::Arg &a : e.args) {
    if (a.keyword.empty()) {
      if (!kw.empty()) {
        emitError(a.loc) << "positional argument after a keyword argument";
        return failure();
      }
      pos.push_back(a.value.get());
    } else if (!kw.emplace(a.keyword, a.value.get()).second) {
      emitError(a.loc) << "argument '" << a.keyword << "' given twice";
      return failure();
    }
  }
  const char *fnName = builtinName(fn);
  auto arity = [&](size_t lo, size_t hi, std::initializer_list<const char *> keywords) {
    for (auto &[k, v] : kw) {
      if (llvm::none_of(keywords, [&](const char *x) { return k == x; })) {
        emitError(v->loc()) << "'" << fnName << "' has no argument '" << k << "'";
        return false;
      }
    }
    if (pos.size() < lo || pos.size() > hi) {
      emitError(e.loc()) << "'" << fnName << "' takes " << lo - (receiver ? 1 : 0)
                         << (hi > lo ? " to " + std::to_string(hi - (receiver ? 1 : 0)) : "")
                         << " arguments" << (receiver ? " besides the value" : "") << "; got "
                         << pos.size() - (receiver ? 1 : 0);
      return false;
    }
    return true;
  };
  auto dimArg = [&](size_t at, const ValueType &x) -> FailureOr<int64_t> {
    ast::Expr *d = pos.size() > at ? pos[at] : (kw.count("dim") ? kw["dim"] : nullptr);
    int64_t dim = -1;
    if (d) {
      FailureOr<int64_t> v = constantInt(*d, "'dim'");
      if (failed(v))
        return failure();
      dim = *v;
    }
    int64_t rank = x.dims.size();
    if (dim < -rank || dim >= rank) {
      emitError(d ? d->loc() : e.loc())
          << "dim " << dim << " is out of range for a value of type " << x.str();
      return failure();
    }
    return dim < 0 ? dim + rank : dim;
  };

  e.sema.entity = Entity::Value;
  e.sema.builtin = fn;
  switch (fn) {
  case Builtin::Stop:
  case Builtin::Finish:
  case Builtin::Cache:
    emitError(e.loc()) << "'" << fnName << "(...)' is a statement; it has no value";
    return failure();
  case Builtin::Save:
  case Builtin::Skip:
    llvm_unreachable("handled by the statement checks");
  case Builtin::Max:
  case Builtin::Min:
    // max(x, y) with a tensor y is the elementwise maximum, as torch.max(a, b).
    if (pos.size() == 2 && kw.empty()) {
      if (failed(value(*pos[1], avail)))
        return failure();
      if (!pos[1]->sema.constant || pos[1]->sema.type.elem != ElemType::I64) {
        if (failed(value(*pos[0], avail)))
          return failure();
        const ValueType &a = pos[0]->sema.type, &b = pos[1]->sema.type;
        auto shape = broadcast(a.dims, b.dims);
        if (!shape || a.elem == ElemType::Bool || b.elem == ElemType::Bool) {
          emitError(e.loc()) << "'" << fnName << "' of " << a.str() << " and " << b.str() << ": "
                             << (shape ? "needs numbers" : "shapes do not broadcast");
          return failure();
        }
        e.sema.type = {promote(a.elem, b.elem), *shape};
        e.sema.intArg = -1; // elementwise
        return success();
      }
    }
    return reduction(e, fn, pos, kw, avail);
  case Builtin::Sum:
  case Builtin::Mean:
  case Builtin::ArgMax:
  case Builtin::ArgMin:
  case Builtin::Norm:
    return reduction(e, fn, pos, kw, avail);
  case Builtin::Softmax:
  case Builtin::LogSoftmax: {
    if (!arity(1, 2, {"dim"}) || failed(value(*pos[0], avail)))
      return failure();
    // Unlike the reductions, softmax keeps dim=-1 as its default (docs/LanguageSpec.md v2).
    FailureOr<int64_t> dim = dimArg(1, pos[0]->sema.type);
    if (failed(dim))
      return failure();
    e.sema.intArg = *dim;
    e.sema.type = pos[0]->sema.type;
    e.sema.type.elem = ElemType::F32;
    return success();
  }
  case Builtin::Exp:
  case Builtin::Log:
  case Builtin::Sqrt:
  case Builtin::Abs:
  case Builtin::Relu:
  case Builtin::Gelu:
  case Builtin::Silu:
  case Builtin::Tanh:
  case Builtin::Sigmoid:
  case Builtin::Float:
  case Builtin::ZerosLike:
  case Builtin::OnesLike: {
    if (!arity(1, 1, {}) || failed(value(*pos[0], avail)))
      return failure();
    const ValueType &x = pos[0]->sema.type;
    e.sema.type = x;
    if (fn == Builtin::ZerosLike || fn == Builtin::OnesLike)
      return success();
    if (fn == Builtin::Abs) {
      if (x.elem == ElemType::Bool) {
        emitError(e.loc()) << "'abs' needs numbers; got " << x.str();
        return failure();
      }
      return success();
    }
    e.sema.type.elem = ElemType::F32;
    return success();
  }
  case Builtin::Clamp: {
    if (!arity(1, 3, {"min", "max"}) || failed(value(*pos[0], avail)))
      return failure();
    ast::Expr *lo = pos.size() > 1 ? pos[1] : (kw.count("min") ? kw["min"] : nullptr);
    ast::Expr *hi = pos.size() > 2 ? pos[2] : (kw.count("max") ? kw["max"] : nullptr);
    // As torch.clamp, either bound may be left out, not both.
    if (!lo && !hi) {
      emitError(e.loc()) << "'clamp' needs a bound, as in 'clamp(x, -1, 1)' or 'clamp(x, min=0)'";
      return failure();
    }
    ValueType t = pos[0]->sema.type;
    for (ast::Expr *b : {lo, hi}) {
      if (!b)
        continue;
      if (failed(value(*b, avail)))
        return failure();
      auto shape = broadcast(t.dims, b->sema.type.dims);
      if (!shape || b->sema.type.elem == ElemType::Bool || t.elem == ElemType::Bool) {
        emitError(b->loc()) << "'clamp' bound of type " << b->sema.type.str()
                            << " does not fit a value of type " << t.str();
        return failure();
      }
      t = {promote(t.elem, b->sema.type.elem), *shape};
    }
    e.sema.type = t;
    return success();
  }
  case Builtin::Where: {
    if (!arity(3, 3, {}))
      return failure();
    for (ast::Expr *p : pos)
      if (failed(value(*p, avail)))
        return failure();
    const ValueType &c = pos[0]->sema.type, &a = pos[1]->sema.type, &b = pos[2]->sema.type;
    if (c.elem != ElemType::Bool) {
      emitError(pos[0]->loc()) << "the condition of 'where' must be bool; got " << c.str();
      return failure();
    }
    auto ab = broadcast(a.dims, b.dims);
    auto all = ab ? broadcast(c.dims, *ab) : std::nullopt;
    if (!all) {
      emitError(e.loc()) << "shape mismatch: 'where' of " << c.str() << ", " << a.str() << " and "
                         << b.str() << " do not broadcast";
      return failure();
    }
    e.sema.type = {promote(a.elem, b.elem), *all};
    return success();
  }
  case Builtin::Unsqueeze:
  case Builtin::View:
  case Builtin::Reshape:
  case Builtin::Transpose:
  case Builtin::Outer:
  case Builtin::Expand:
  case Builtin::BroadcastTo:
    return shapeBuiltin(e, fn, pos, kw, avail);
  case Builtin::Cat:
  case Builtin::Stack:
    return joinBuiltin(e, fn, pos, kw, avail);
  case Builtin::TopK: {
    if (!arity(2, 2, {"k"}) && !(pos.size() == 1 && kw.count("k") && arity(1, 1, {"k"})))
      return failure();
    if (failed(value(*pos[0], avail)))
      return failure();
    FailureOr<int64_t> k = constantInt(pos.size() > 1 ? *pos[1] : *kw["k"], "'k'");
    if (failed(k))
      return failure();
    const ValueType &x = pos[0]->sema.type;
    if (x.dims.empty() || x.elem == ElemType::Bool) {
      emitError(e.loc()) << "'topk' needs a tensor of numbers; got " << x.str();
      return failure();
    }
    if (*k < 1 || (x.dims.back() >= 0 && *k > x.dims.back())) {
      emitError(e.loc()) << "'topk' with k = " << *k << " on a last dimension of size "
                         << (x.dims.back() >= 0 ? std::to_string(x.dims.back()) : "T");
      return failure();
    }
    e.sema.intArg = *k;
    e.sema.type = x;
    e.sema.type.dims.back() = *k;
    return success();
  }
  }
  llvm_unreachable("unknown builtin");
}

FailureOr<int> Checker::sitePattern(ast::Expr &e, std::optional<int64_t> layer, bool &wildcard) {
  // Patterns are paths, resolved structurally so that `*` can stand for a layer index.
  if (auto *n = dyn_cast<ast::NameExpr>(&e)) {
    if (n->name == "logits" || n->name == "samples" || n->name == "result")
      return arch.findSite(n->name);
    std::optional<std::string_view> path = schema::Architecture::expandAlias(n->name);
    if (n->name == "model")
      path = "model";
    std::string underModel = "model." + n->name;
    if (!path && arch.findModule(underModel) >= 0)
      path = underModel;
    if (!path) {
      emitError(e.loc()) << "cache(...) takes site paths such as 'layers[*].output'; '" << n->name
                         << "' is not a module or site";
      return failure();
    }
    return -2 - arch.findModule(*path); // a module, encoded below -1
  }
  if (auto *ix = dyn_cast<ast::IndexExpr>(&e)) {
    FailureOr<int> base = sitePattern(*ix->base, layer, wildcard);
    if (failed(base))
      return failure();
    if (*base > -2 || arch.modules()[-2 - *base].path != "model.layers" ||
        ix->subscripts.size() != 1 || ix->subscripts[0].kind == ast::Subscript::Kind::Slice ||
        ix->subscripts[0].kind == ast::Subscript::Kind::NewAxis) {
      emitError(e.loc()) << "cache(...) patterns index only 'layers', with a number or '*'";
      return failure();
    }
    int64_t i;
    if (ix->subscripts[0].kind == ast::Subscript::Kind::Wildcard) {
      wildcard = true;
      i = layer.value_or(0);
    } else {
      FailureOr<int64_t> v = constantInt(*ix->subscripts[0].index, "a layer index");
      if (failed(v))
        return failure();
      int64_t n = arch.config().layers;
      if (*v < -n || *v >= n) {
        emitError(ix->subscripts[0].loc)
            << "layer index " << *v << " is out of range: the model has " << n << " layers (0.."
            << n - 1 << ", or -" << n << "..-1)";
        return failure();
      }
      i = *v < 0 ? *v + n : *v;
    }
    return -2 - arch.findModule("model.layers." + std::to_string(i));
  }
  if (auto *m = dyn_cast<ast::MemberExpr>(&e)) {
    FailureOr<int> base = sitePattern(*m->base, layer, wildcard);
    if (failed(base))
      return failure();
    if (*base > -2) {
      emitError(e.loc()) << "a site has no member '" << m->member << "'";
      return failure();
    }
    const schema::Module &mod = arch.modules()[-2 - *base];
    if (m->member == "output" || m->member == "input") {
      int site = m->member == "output" ? mod.outputSite : mod.inputSite;
      if (site < 0) {
        emitError(e.loc()) << "module '" << mod.path << "' has no '" << m->member << "' site";
        return failure();
      }
      return site;
    }
    if (int site = arch.findSite(mod.path + "." + m->member); site >= 0)
      return site;
    std::vector<std::string> candidates = {"output", "input"};
    if (arch.findSite(mod.path + ".pattern") >= 0)
      candidates.push_back("pattern");
    for (int child : mod.children) {
      if (arch.modules()[child].name == m->member)
        return -2 - child;
      candidates.push_back(arch.modules()[child].name);
    }
    emitError(e.loc()) << "unknown module or accessor '" << m->member << "' in '" << mod.path << "'"
                       << didYouMean(m->member, candidates);
    return failure();
  }
  emitError(e.loc()) << "cache(...) takes site paths such as 'layers[*].output'";
  return failure();
}

} // namespace nnsc

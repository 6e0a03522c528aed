//===- SemaExpr.cpp - semantic checks of expressions ------------*- C++ -*-===//

#include "Checker.h"
#include "Suggest.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;
using ast::Entity;

namespace {

/// Sliced token dimensions: dynamic, but no longer the prompt's T.
constexpr int64_t kSlicedTokens = -1000;

struct BuiltinName {
  const char *name;
  Builtin fn;
  bool function; ///< callable as `name(x, ...)`
  bool method;   ///< callable as `x.name(...)`
};

// `norm` as a free function is the alias of `model.norm` (LANGUAGE.md: `lm_head(norm(h))`), so
// torch's norm is a method only.
const BuiltinName kBuiltins[] = {
    {"sum", Builtin::Sum, true, true},
    {"mean", Builtin::Mean, true, true},
    {"max", Builtin::Max, true, true},
    {"min", Builtin::Min, true, true},
    {"argmax", Builtin::ArgMax, true, true},
    {"argmin", Builtin::ArgMin, true, true},
    {"norm", Builtin::Norm, false, true},
    {"softmax", Builtin::Softmax, true, true},
    {"log_softmax", Builtin::LogSoftmax, true, true},
    {"exp", Builtin::Exp, true, true},
    {"log", Builtin::Log, true, true},
    {"sqrt", Builtin::Sqrt, true, true},
    {"abs", Builtin::Abs, true, true},
    {"relu", Builtin::Relu, true, true},
    {"gelu", Builtin::Gelu, true, true},
    {"silu", Builtin::Silu, true, true},
    {"tanh", Builtin::Tanh, true, true},
    {"sigmoid", Builtin::Sigmoid, true, true},
    {"clamp", Builtin::Clamp, true, true},
    {"where", Builtin::Where, true, false},
    {"zeros_like", Builtin::ZerosLike, true, false},
    {"ones_like", Builtin::OnesLike, true, false},
    {"topk", Builtin::TopK, true, true},
    {"float", Builtin::Float, false, true},
    {"save", Builtin::Save, false, true},
    {"stop", Builtin::Stop, true, false},
    {"finish", Builtin::Finish, true, false},
    {"cache", Builtin::Cache, true, false},
};

const BuiltinName *findBuiltin(StringRef name, bool method) {
  for (const BuiltinName &b : kBuiltins)
    if (name == b.name && (method ? b.method : b.function))
      return &b;
  return nullptr;
}

std::vector<std::string> builtinNames(bool method) {
  std::vector<std::string> names;
  for (const BuiltinName &b : kBuiltins)
    if (method ? b.method : b.function)
      names.push_back(b.name);
  if (method)
    names.push_back("skip");
  return names;
}

ValueType scalar(ElemType elem) { return {elem, {}}; }

bool isFloatLike(ElemType e) { return e != ElemType::Bool; }

} // namespace

void Avail::merge(const Avail &other) {
  for (const Dep &d : other.deps) {
    auto it = llvm::find_if(
        deps, [&](const Dep &x) { return x.invoke == d.invoke && x.stepZero == d.stepZero; });
    if (it == deps.end())
      deps.push_back(d);
    else if (d.order > it->order)
      *it = d;
  }
}

ValueType Checker::siteType(int site) const {
  const schema::Site &s = arch.sites()[site];
  ValueType type{s.elementType == schema::ElementType::F32 ? ElemType::F32 : ElemType::I64, {}};
  for (int64_t d : s.shape)
    type.dims.push_back(d == schema::kTokens ? tokenDim(ctx.invoke) : d);
  return type;
}

std::string Checker::describe(const ast::Expr &e) const {
  switch (e.sema.entity) {
  case Entity::Site:
    return "site '" + arch.sites()[e.sema.site].path + "'";
  case Entity::Module:
  case Entity::Layers:
    return "module '" + arch.modules()[e.sema.module].path + "'";
  case Entity::Function:
    return "function";
  case Entity::Method:
    return "method";
  case Entity::Steps:
    return "'steps'";
  default:
    return "value";
  }
}

LogicalResult Checker::expr(ast::Expr &e, Avail &avail) {
  if (auto it = checked.find(&e); it != checked.end()) {
    avail.merge(it->second);
    return success(e.sema.entity != Entity::Unresolved);
  }
  Avail own;
  LogicalResult result = failure();
  switch (e.getKind()) {
  case ast::Expr::Kind::Name:
    result = name(cast<ast::NameExpr>(e), own);
    break;
  case ast::Expr::Kind::IntLit:
    e.sema.entity = Entity::Value;
    e.sema.type = scalar(ElemType::I64);
    e.sema.constant = cast<ast::IntLitExpr>(e).value;
    result = success();
    break;
  case ast::Expr::Kind::FloatLit:
    e.sema.entity = Entity::Value;
    e.sema.type = scalar(ElemType::F32);
    e.sema.constantFloat = cast<ast::FloatLitExpr>(e).value;
    result = success();
    break;
  case ast::Expr::Kind::BoolLit:
    e.sema.entity = Entity::Value;
    e.sema.type = scalar(ElemType::Bool);
    e.sema.constant = cast<ast::BoolLitExpr>(e).value;
    result = success();
    break;
  case ast::Expr::Kind::StringLit:
    emitError(e.loc()) << "a string is not a value; strings have no use in this version of "
                          "the language";
    break;
  case ast::Expr::Kind::Member:
    result = member(cast<ast::MemberExpr>(e), own);
    break;
  case ast::Expr::Kind::Index:
    result = index(cast<ast::IndexExpr>(e), own);
    break;
  case ast::Expr::Kind::Call:
    result = call(cast<ast::CallExpr>(e), own);
    break;
  case ast::Expr::Kind::Unary:
    result = unary(cast<ast::UnaryExpr>(e), own);
    break;
  case ast::Expr::Kind::Binary:
    result = binary(cast<ast::BinaryExpr>(e), own);
    break;
  }
  if (failed(result))
    e.sema.entity = Entity::Unresolved;
  checked.try_emplace(&e, own);
  avail.merge(own);
  return result;
}

LogicalResult Checker::value(ast::Expr &e, Avail &avail) {
  if (failed(expr(e, avail)))
    return failure();
  switch (e.sema.entity) {
  case Entity::Value:
    return success();
  case Entity::Site: {
    int site = e.sema.site;
    const schema::Site &s = arch.sites()[site];
    if (s.phase == schema::Phase::Result && ctx.inSteps) {
      emitError(e.loc()) << "'result' is only available once the request finishes; read it "
                            "outside 'for step in steps'";
      return failure();
    }
    if (ctx.traceHasInvokes && !ctx.inInvoke) {
      emitError(e.loc()) << "in a trace with invoke blocks every site access belongs to an "
                            "invoke; move this read of '"
                         << s.path << "' into one";
      return failure();
    }
    if (failed(order.access(site, ctx.steps, ctx.invoke, e.loc())))
      return failure();
    Avail read;
    read.deps.push_back({ctx.invoke, site, e.loc(), !ctx.inSteps});
    checked[&e].merge(read);
    avail.merge(read);
    // From now on the expression is the value read; `site` still says which.
    e.sema.entity = Entity::Value;
    e.sema.type = siteType(site);
    return success();
  }
  case Entity::Module:
  case Entity::Layers:
    emitError(e.loc()) << describe(e) << " is not a value; read one of its sites, as in '.output'";
    return failure();
  case Entity::Steps:
    emitError(e.loc()) << "'steps' is not a value; iterate it with 'for step in steps'";
    return failure();
  case Entity::Function:
  case Entity::Method:
    emitError(e.loc()) << "a " << describe(e) << " is not a value; call it";
    return failure();
  case Entity::Unresolved:
    break;
  }
  return failure();
}

LogicalResult Checker::name(ast::NameExpr &e, Avail &avail) {
  if (Binding *b = lookup(e.name)) {
    if (b->poisoned)
      return failure();
    e.sema.entity = Entity::Value;
    e.sema.type = b->type;
    e.sema.source = b->source;
    avail.merge(b->avail);
    return success();
  }
  if (auto it = params.find(e.name); it != params.end()) {
    e.sema.entity = Entity::Value;
    e.sema.type = it->second->resolved;
    e.sema.source = ast::NameSource::Param;
    return success();
  }
  if (std::optional<std::string_view> path = schema::Architecture::expandAlias(e.name)) {
    e.sema.module = arch.findModule(*path);
    e.sema.entity = e.name == "layers" ? Entity::Layers : Entity::Module;
    return success();
  }
  if (e.name == "model") {
    e.sema.module = arch.findModule("model");
    e.sema.entity = Entity::Module;
    return success();
  }
  if (e.name == "logits" || e.name == "samples" || e.name == "result") {
    e.sema.site = arch.findSite(e.name);
    e.sema.entity = Entity::Site;
    return success();
  }
  if (e.name == "steps") {
    e.sema.entity = Entity::Steps;
    return success();
  }
  if (const BuiltinName *b = findBuiltin(e.name, /*method=*/false)) {
    e.sema.entity = Entity::Function;
    e.sema.builtin = b->fn;
    return success();
  }
  if (e.name == "step") {
    emitError(e.loc()) << "'step' is only defined inside a 'for step in steps' loop";
    return failure();
  }
  emitError(e.loc()) << "unknown name '" << e.name << "'" << didYouMean(e.name, visibleNames());
  return failure();
}

LogicalResult Checker::member(ast::MemberExpr &e, Avail &avail) {
  if (failed(expr(*e.base, avail)))
    return failure();
  const ast::ExprSema &base = e.base->sema;
  switch (base.entity) {
  case Entity::Module: {
    const schema::Module &m = arch.modules()[base.module];
    if (e.member == "output" || e.member == "input") {
      int site = e.member == "output" ? m.outputSite : m.inputSite;
      if (site < 0) {
        emitError(e.loc()) << "module '" << m.path << "' has no '" << e.member
                           << "' site; use one of its submodules";
        return failure();
      }
      e.sema.entity = Entity::Site;
      e.sema.site = site;
      return success();
    }
    if (e.member == "skip") {
      e.sema.entity = Entity::Method;
      e.sema.builtin = Builtin::Skip;
      e.sema.module = base.module;
      return success();
    }
    for (int child : m.children) {
      if (arch.modules()[child].name == e.member) {
        e.sema.entity = Entity::Module;
        e.sema.module = child;
        return success();
      }
    }
    std::vector<std::string> candidates = {"output", "input", "skip"};
    for (int child : m.children)
      candidates.push_back(arch.modules()[child].name);
    emitError(e.loc()) << "unknown module or accessor '" << e.member << "' in '" << m.path << "'"
                       << didYouMean(e.member, candidates);
    return failure();
  }
  case Entity::Layers:
    emitError(e.loc()) << "'" << arch.modules()[base.module].path << "' is a list of "
                       << arch.config().layers << " layers; index it first, as in 'layers[3]."
                       << e.member << "'";
    return failure();
  case Entity::Site:
  case Entity::Value:
    if (const BuiltinName *b = findBuiltin(e.member, /*method=*/true)) {
      e.sema.entity = Entity::Method;
      e.sema.builtin = b->fn;
      return success();
    }
    emitError(e.loc()) << "unknown method '" << e.member << "' on a "
                       << (base.entity == Entity::Site ? "site value" : "value")
                       << didYouMean(e.member, builtinNames(true));
    return failure();
  default:
    emitError(e.loc()) << "a " << describe(*e.base) << " has no member '" << e.member << "'";
    return failure();
  }
}

FailureOr<int64_t> Checker::constantInt(ast::Expr &e, StringRef what) {
  Avail ignored;
  if (failed(value(e, ignored)))
    return failure();
  if (!e.sema.constant || e.sema.type.elem != ElemType::I64) {
    emitError(e.loc()) << what << " must be an integer constant";
    return failure();
  }
  return *e.sema.constant;
}

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
  if (x.constant)
    e.sema.constant = -*x.constant;
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
  if (lc && rc && ints) {
    switch (e.op) {
    case Op::Add:
      e.sema.constant = *lc + *rc;
      break;
    case Op::Sub:
      e.sema.constant = *lc - *rc;
      break;
    case Op::Mul:
      e.sema.constant = *lc * *rc;
      break;
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
  return success();
}

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
  const char *fnName = "";
  for (const BuiltinName &b : kBuiltins)
    if (b.fn == fn)
      fnName = b.name;
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
    [[fallthrough]];
  case Builtin::Sum:
  case Builtin::Mean:
  case Builtin::ArgMax:
  case Builtin::ArgMin:
  case Builtin::Norm:
  case Builtin::Softmax:
  case Builtin::LogSoftmax: {
    if (!arity(1, 2, {"dim"}) || failed(value(*pos[0], avail)))
      return failure();
    const ValueType &x = pos[0]->sema.type;
    FailureOr<int64_t> dim = dimArg(1, x);
    if (failed(dim))
      return failure();
    e.sema.intArg = *dim;
    e.sema.type = x;
    if (fn == Builtin::Softmax || fn == Builtin::LogSoftmax) {
      e.sema.type.elem = ElemType::F32;
      return success();
    }
    e.sema.type.dims.erase(e.sema.type.dims.begin() + *dim);
    if (fn == Builtin::ArgMax || fn == Builtin::ArgMin)
      e.sema.type.elem = ElemType::I64;
    else if (fn == Builtin::Mean || fn == Builtin::Norm)
      e.sema.type.elem = ElemType::F32;
    else if (x.elem == ElemType::Bool)
      e.sema.type.elem = ElemType::I64;
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
        ix->subscripts.size() != 1 || ix->subscripts[0].kind == ast::Subscript::Kind::Slice) {
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
    std::vector<std::string> candidates = {"output", "input"};
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

//===- SemaExpr.cpp - semantic checks of expressions ------------*- C++ -*-===//

#include "Checker.h"
#include "Suggest.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace nnsc {

using ast::Builtin;
using ast::Entity;

namespace {

struct BuiltinName {
  const char *name;
  Builtin fn;
  bool function; ///< callable as `name(x, ...)`
  bool method;   ///< callable as `x.name(...)`
};

// `norm` as a free function is the alias of `model.norm` (docs/LanguageSpec.md:
// `lm_head(norm(h))`), so torch's norm is a method only.
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
    {"unsqueeze", Builtin::Unsqueeze, true, true},
    {"view", Builtin::View, false, true},
    {"reshape", Builtin::Reshape, true, true},
    {"transpose", Builtin::Transpose, true, true},
    {"outer", Builtin::Outer, true, true},
    {"expand", Builtin::Expand, false, true},
    {"broadcast_to", Builtin::BroadcastTo, true, true},
    {"cat", Builtin::Cat, true, false},
    {"stack", Builtin::Stack, true, false},
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

} // namespace

const char *builtinName(Builtin fn) {
  for (const BuiltinName &b : kBuiltins)
    if (b.fn == fn)
      return b.name;
  return "";
}

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
    type.dims.push_back(d == schema::kTokens    ? tokenDim(ctx.invoke)
                        : d == schema::kContext ? kContextTokens
                                                : d);
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
  case ast::Expr::Kind::List:
    // cat, stack and broadcast_to read their sequence argument themselves.
    emitError(e.loc()) << "a " << (cast<ast::ListExpr>(e).tuple ? "tuple" : "list")
                       << " is not a value; lists and tuples are only the sequence argument of "
                          "'cat', 'stack' (as in 'cat([a, b], dim=0)') and 'broadcast_to' (as in "
                          "'x.broadcast_to((2, 576))')";
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
  case Entity::Layers:
    // The name `layers` is also the model dimension: the layer count, as in `layers[layers - 1]`.
    if (auto *n = dyn_cast<ast::NameExpr>(&e); n && n->name == "layers") {
      e.sema.entity = Entity::Value;
      e.sema.type = scalar(ElemType::I64);
      e.sema.constant = arch.config().layers;
      e.sema.source = ast::NameSource::Constant;
      return success();
    }
    [[fallthrough]];
  case Entity::Module:
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
  // A path printed by --print-sites may be written without its leading `model.`.
  if (int module = arch.findModule("model." + e.name); module >= 0) {
    e.sema.module = module;
    e.sema.entity = Entity::Module;
    return success();
  }
  // A model dimension (`hidden`, `heads`, ...): an integer constant of the model compiled for.
  std::map<std::string, int64_t> dims = arch.dimensionNames();
  if (auto it = dims.find(e.name); it != dims.end()) {
    e.sema.entity = Entity::Value;
    e.sema.type = scalar(ElemType::I64);
    e.sema.constant = it->second;
    e.sema.source = ast::NameSource::Constant;
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
        // `model.layers` is the list of layers, as the alias `layers` is.
        e.sema.entity =
            arch.modules()[child].path == "model.layers" ? Entity::Layers : Entity::Module;
        e.sema.module = child;
        return success();
      }
    }
    // Sites of their own beside input/output (self_attn.pattern).
    if (int site = arch.findSite(m.path + "." + e.member); site >= 0) {
      e.sema.entity = Entity::Site;
      e.sema.site = site;
      return success();
    }
    std::vector<std::string> candidates = {"output", "input", "skip"};
    if (arch.findSite(m.path + ".pattern") >= 0)
      candidates.push_back("pattern");
    for (int child : m.children)
      candidates.push_back(arch.modules()[child].name);
    emitError(e.loc()) << "unknown module or accessor '" << e.member << "' in '" << m.path << "'"
                       << didYouMean(e.member, candidates);
    return failure();
  }
  case Entity::Layers:
    if (!e.member.empty() && llvm::all_of(e.member, llvm::isDigit)) {
      // `layers.3`, the path as --print-sites prints it.
      int64_t n = arch.config().layers;
      int64_t i = e.member.size() > 9 ? n : std::stoll(e.member);
      if (i >= n) {
        emitError(e.loc()) << "layer index " << e.member << " is out of range: the model has " << n
                           << " layers (0.." << n - 1 << ")";
        return failure();
      }
      e.sema.entity = Entity::Module;
      e.sema.module = arch.findModule("model.layers." + std::to_string(i));
      return success();
    }
    emitError(e.loc()) << "'" << arch.modules()[base.module].path << "' is a list of "
                       << arch.config().layers << " layers; index it first, as in 'layers[3]."
                       << e.member << "'";
    return failure();
  case Entity::Site:
  case Entity::Value:
    if (e.member == "T") {
      // torch's `.T` of a matrix: its transpose.
      if (failed(value(*e.base, avail)))
        return failure();
      const ValueType &x = e.base->sema.type;
      if (x.dims.size() != 2) {
        emitError(e.loc()) << "'.T' needs a 2-d value; got " << x.str()
                           << "; use 'transpose(a, b)' for other ranks";
        return failure();
      }
      e.sema.entity = Entity::Value;
      e.sema.builtin = Builtin::Transpose;
      e.sema.intArg = 0;
      e.sema.intArg2 = 1;
      e.sema.type = {x.elem, {x.dims[1], x.dims[0]}};
      return success();
    }
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

bool isIntConstant(const ast::Expr &e) {
  return e.sema.constant && e.sema.type.elem == ElemType::I64;
}

void explainNotConstant(const ast::Expr &e, InFlightDiagnostic &diag) {
  const ast::Expr *part = &e;
  // Down to the operand that is not an integer constant.
  while (true) {
    if (auto *u = dyn_cast<ast::UnaryExpr>(part); u && !isIntConstant(*u->operand)) {
      part = u->operand.get();
      continue;
    }
    if (auto *b = dyn_cast<ast::BinaryExpr>(part)) {
      if (!isIntConstant(*b->lhs) || !isIntConstant(*b->rhs)) {
        part = isIntConstant(*b->lhs) ? b->rhs.get() : b->lhs.get();
        continue;
      }
      if (b->op == ast::BinaryOp::Div)
        diag << "; '/' is true division, whose result is a float (as in Python and torch): use "
                "'//' for integer division";
      return;
    }
    break;
  }
  const ast::ExprSema &s = part->sema;
  if (auto *n = dyn_cast<ast::NameExpr>(part)) {
    if (s.source == ast::NameSource::Param)
      diag << "; '" << n->name << "' is a param, whose value is known only when the program runs";
    else if (s.source == ast::NameSource::Local || s.source == ast::NameSource::Step)
      diag << "; '" << n->name << "' is computed when the program runs";
  } else if (s.constantFloat || s.type.elem == ElemType::F32) {
    diag << "; it is a float";
  } else if (s.type.elem == ElemType::Bool) {
    diag << "; it is a bool";
  } else if (s.site >= 0 || isa<ast::IndexExpr, ast::CallExpr, ast::MemberExpr>(part)) {
    diag << "; it is computed when the program runs";
  }
}

FailureOr<int64_t> Checker::constantInt(ast::Expr &e, StringRef what) {
  Avail ignored;
  if (failed(value(e, ignored)))
    return failure();
  if (!isIntConstant(e)) {
    InFlightDiagnostic diag = emitError(e.loc()) << what << " must be an integer constant";
    explainNotConstant(e, diag);
    return failure();
  }
  return *e.sema.constant;
}
} // namespace nnsc

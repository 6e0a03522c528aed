//===- Unroll.cpp - compile-time loops over integers ------------*- C++ -*-===//

#include "Unroll.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace mlir;

namespace nnsc {
namespace {

/// The most copies one loop may make: far beyond any model's layer count, small enough that a
/// typo like `0..100000000` is an error rather than an out-of-memory.
constexpr int64_t kMaxIterations = 4096;
/// The most statements all unrolled loops of a trace may produce together: nested loops
/// multiply (three nested 0..4096 loops would be 2^36 copies), so each loop's limit alone does
/// not bound the work.
constexpr int64_t kMaxUnrolledStatements = 65536;

/// Deep copies with one loop variable replaced by a literal; every copied statement gets the
/// loop's suffix (which already includes those of enclosing unrolled loops).
class Cloner {
public:
  Cloner(StringRef var, int64_t value, std::string suffix)
      : var(var), value(value), suffix(std::move(suffix)) {}

  ast::ExprPtr expr(const ast::Expr *e) {
    if (!e)
      return nullptr;
    using K = ast::Expr::Kind;
    switch (e->getKind()) {
    case K::Name: {
      auto *n = cast<ast::NameExpr>(e);
      if (n->name == var)
        return std::make_unique<ast::IntLitExpr>(n->loc(), value);
      return std::make_unique<ast::NameExpr>(n->loc(), n->name);
    }
    case K::IntLit:
      return std::make_unique<ast::IntLitExpr>(e->loc(), cast<ast::IntLitExpr>(e)->value);
    case K::FloatLit:
      return std::make_unique<ast::FloatLitExpr>(e->loc(), cast<ast::FloatLitExpr>(e)->value);
    case K::StringLit:
      return std::make_unique<ast::StringLitExpr>(e->loc(), cast<ast::StringLitExpr>(e)->value);
    case K::BoolLit:
      return std::make_unique<ast::BoolLitExpr>(e->loc(), cast<ast::BoolLitExpr>(e)->value);
    case K::Member: {
      auto *m = cast<ast::MemberExpr>(e);
      return std::make_unique<ast::MemberExpr>(m->loc(), expr(m->base.get()), m->member);
    }
    case K::Index: {
      auto *ix = cast<ast::IndexExpr>(e);
      std::vector<ast::Subscript> subs;
      for (const ast::Subscript &s : ix->subscripts)
        subs.push_back({s.kind, s.loc, expr(s.index.get()), expr(s.lo.get()), expr(s.hi.get()),
                        expr(s.stride.get())});
      return std::make_unique<ast::IndexExpr>(ix->loc(), expr(ix->base.get()), std::move(subs));
    }
    case K::Call: {
      auto *c = cast<ast::CallExpr>(e);
      std::vector<ast::Arg> args;
      for (const ast::Arg &a : c->args)
        args.push_back({a.loc, a.keyword, expr(a.value.get())});
      return std::make_unique<ast::CallExpr>(c->loc(), expr(c->callee.get()), std::move(args));
    }
    case K::Unary: {
      auto *u = cast<ast::UnaryExpr>(e);
      return std::make_unique<ast::UnaryExpr>(u->loc(), u->op, expr(u->operand.get()));
    }
    case K::Binary: {
      auto *b = cast<ast::BinaryExpr>(e);
      return std::make_unique<ast::BinaryExpr>(b->loc(), b->op, expr(b->lhs.get()),
                                               expr(b->rhs.get()));
    }
    case K::List: {
      auto *l = cast<ast::ListExpr>(e);
      std::vector<ast::ExprPtr> items;
      for (const ast::ExprPtr &item : l->items)
        items.push_back(expr(item.get()));
      return std::make_unique<ast::ListExpr>(l->loc(), std::move(items), l->tuple);
    }
    }
    llvm_unreachable("unknown expression kind");
  }

  ast::Block block(const ast::Block &b) {
    ast::Block result{b.loc, {}};
    for (const ast::StmtPtr &s : b.stmts)
      result.stmts.push_back(stmt(s.get()));
    return result;
  }

  ast::StmtPtr stmt(const ast::Stmt *s) {
    ast::StmtPtr result;
    switch (s->getKind()) {
    case ast::Stmt::Kind::Assign: {
      auto *a = cast<ast::AssignStmt>(s);
      result = std::make_unique<ast::AssignStmt>(a->loc(), expr(a->target.get()), a->op,
                                                 expr(a->value.get()));
      break;
    }
    case ast::Stmt::Kind::Expr:
      result = std::make_unique<ast::ExprStmt>(s->loc(), expr(cast<ast::ExprStmt>(s)->expr.get()));
      break;
    case ast::Stmt::Kind::If: {
      auto *i = cast<ast::IfStmt>(s);
      std::optional<ast::Block> elseBlock;
      if (i->elseBlock)
        elseBlock = block(*i->elseBlock);
      result = std::make_unique<ast::IfStmt>(i->loc(), expr(i->cond.get()), block(i->thenBlock),
                                             std::move(elseBlock));
      break;
    }
    case ast::Stmt::Kind::For: {
      auto *f = cast<ast::ForStmt>(s);
      result = std::make_unique<ast::ForStmt>(f->loc(), f->var, f->varLoc, expr(f->lo.get()),
                                              expr(f->hi.get()), expr(f->step.get()),
                                              expr(f->iter.get()), block(f->body));
      break;
    }
    case ast::Stmt::Kind::Invoke: {
      auto *i = cast<ast::InvokeStmt>(s);
      result = std::make_unique<ast::InvokeStmt>(i->loc(), i->name, block(i->body));
      break;
    }
    }
    result->unrollSuffix = suffix;
    return result;
  }

private:
  StringRef var;
  int64_t value;
  std::string suffix;
};

/// The copies a loop `lo..hi:step` makes, as Python's range(lo, hi, step) counts them; bounds
/// may be anywhere in int64_t, so the distance is taken unsigned (no overflow).
uint64_t iterationCount(int64_t lo, int64_t hi, int64_t step) {
  if (step > 0 ? hi <= lo : hi >= lo)
    return 0;
  uint64_t distance = step > 0 ? uint64_t(hi) - uint64_t(lo) : uint64_t(lo) - uint64_t(hi);
  uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(-(step + 1)) + 1;
  return distance / stride + (distance % stride != 0);
}

/// The loop as the user wrote it, with its bounds evaluated: "for i in 0..30:2".
std::string loopText(const ast::ForStmt &f, int64_t lo, int64_t hi, int64_t step) {
  std::string text = "for " + f.var + " in " + std::to_string(lo) + ".." + std::to_string(hi);
  if (f.step)
    text += ":" + std::to_string(step);
  return text;
}

/// unrollRangeLoops with the statements still allowed to be made (`budget`); false once it is
/// spent (reported once, at the loop that spent it).
LogicalResult unroll(ast::Block &block, int64_t &budget, BoundEvaluator evaluate) {
  bool ok = true;
  std::vector<ast::StmtPtr> result;
  for (ast::StmtPtr &s : block.stmts) {
    if (budget < 0)
      return failure();
    if (auto *i = dyn_cast<ast::IfStmt>(s.get())) {
      ok &= succeeded(unroll(i->thenBlock, budget, evaluate));
      if (i->elseBlock)
        ok &= succeeded(unroll(*i->elseBlock, budget, evaluate));
    } else if (auto *inv = dyn_cast<ast::InvokeStmt>(s.get())) {
      ok &= succeeded(unroll(inv->body, budget, evaluate));
    }
    auto *f = dyn_cast<ast::ForStmt>(s.get());
    if (!f || !f->isRange()) {
      if (f)
        ok &= succeeded(unroll(f->body, budget, evaluate));
      result.push_back(std::move(s));
      continue;
    }
    FailureOr<int64_t> lo = evaluate(*f->lo, "a loop bound");
    FailureOr<int64_t> hi = failure();
    if (succeeded(lo))
      hi = evaluate(*f->hi, "a loop bound");
    FailureOr<int64_t> step = int64_t(1);
    if (succeeded(hi) && f->step)
      step = evaluate(*f->step, "a loop step");
    if (failed(step)) {
      ok = false;
      continue;
    }
    if (*step == 0) {
      emitError(f->step->loc()) << "a loop step must not be zero";
      ok = false;
      continue;
    }
    uint64_t count = iterationCount(*lo, *hi, *step);
    if (count > uint64_t(kMaxIterations)) {
      emitError(f->loc()) << "loop '" << loopText(*f, *lo, *hi, *step) << "' unrolls to " << count
                          << " copies; at most " << kMaxIterations << " are allowed";
      ok = false;
      continue;
    }
    for (int64_t k = 0; k < int64_t(count); ++k) {
      // The value lies between the bounds; unsigned arithmetic keeps k * step from overflowing
      // on the way.
      int64_t i = int64_t(uint64_t(*lo) + uint64_t(k) * uint64_t(*step));
      Cloner cloner(f->var, i, f->unrollSuffix + "." + std::to_string(i));
      ast::Block copy = cloner.block(f->body);
      // Loops nested in the copy see the substituted value in their bounds.
      const int64_t before = budget;
      ok &= succeeded(unroll(copy, budget, evaluate));
      if (budget < 0)
        return failure(); // reported by the nested loop that spent it
      // Statements of nested loops were charged by those loops; charge the rest of the copy.
      budget -= std::max<int64_t>(int64_t(copy.stmts.size()) - (before - budget), 0);
      if (budget < 0) {
        emitError(f->loc()) << "loop '" << loopText(*f, *lo, *hi, *step)
                            << "' makes the trace more than " << kMaxUnrolledStatements
                            << " statements long once unrolled (nested loops multiply)";
        return failure();
      }
      for (ast::StmtPtr &c : copy.stmts)
        result.push_back(std::move(c));
    }
  }
  block.stmts = std::move(result);
  return success(ok);
}

} // namespace

LogicalResult unrollRangeLoops(ast::Block &block, BoundEvaluator evaluate) {
  int64_t budget = kMaxUnrolledStatements;
  return unroll(block, budget, evaluate);
}

} // namespace nnsc

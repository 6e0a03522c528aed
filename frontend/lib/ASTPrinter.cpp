//===- ASTPrinter.cpp - textual dump of the AST -----------------*- C++ -*-===//
//
// One node per line, indented by depth, each with its line:col: what `nnsc -emit=ast` prints.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Frontend/AST.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

using namespace mlir;

namespace nnsc::ast {

const char *spelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::FloorDiv:
    return "//";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::MatMul:
    return "@";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::And:
    return "and";
  case BinaryOp::Or:
    return "or";
  }
  return "?";
}

namespace {

class Printer {
public:
  explicit Printer(llvm::raw_ostream &os) : os(os) {}

  void program(const Program &p) {
    for (const ParamDecl &param : p.params) {
      line(param.loc) << "Param " << param.name << " : " << param.type.elem;
      if (!param.type.dims.empty()) {
        os << "[";
        for (size_t i = 0; i < param.type.dims.size(); ++i) {
          const TypeDim &d = param.type.dims[i];
          os << (i ? ", " : "") << (d.size ? std::to_string(*d.size) : d.name);
        }
        os << "]";
      }
      os << "\n";
      nested([&] { expr(param.init.get()); });
    }
    for (const TraceDecl &t : p.traces) {
      line(t.loc) << "Trace " << (t.name.empty() ? "<unnamed>" : t.name) << "\n";
      nested([&] { block(t.body); });
    }
  }

private:
  llvm::raw_ostream &line(Location loc) {
    os.indent(depth * 2);
    if (auto flc = dyn_cast<FileLineColLoc>(loc))
      os << flc.getLine() << ":" << flc.getColumn() << " ";
    return os;
  }
  template <typename F> void nested(F f) {
    ++depth;
    f();
    --depth;
  }

  void block(const Block &b) {
    for (const StmtPtr &s : b.stmts)
      stmt(*s);
  }

  void stmt(const Stmt &s) {
    switch (s.getKind()) {
    case Stmt::Kind::Assign: {
      auto &a = cast<AssignStmt>(s);
      static const char *const ops[] = {"=", "+=", "-=", "*=", "/="};
      line(s.loc()) << "Assign " << ops[int(a.op)] << "\n";
      nested([&] {
        expr(a.target.get());
        expr(a.value.get());
      });
      break;
    }
    case Stmt::Kind::Expr:
      line(s.loc()) << "ExprStmt\n";
      nested([&] { expr(cast<ExprStmt>(s).expr.get()); });
      break;
    case Stmt::Kind::If: {
      auto &i = cast<IfStmt>(s);
      line(s.loc()) << "If\n";
      nested([&] {
        expr(i.cond.get());
        line(i.thenBlock.loc) << "Then\n";
        nested([&] { block(i.thenBlock); });
        if (i.elseBlock) {
          line(i.elseBlock->loc) << "Else\n";
          nested([&] { block(*i.elseBlock); });
        }
      });
      break;
    }
    case Stmt::Kind::For: {
      auto &f = cast<ForStmt>(s);
      line(s.loc()) << "For " << f.var << (f.isRange() ? " in range" : " in") << "\n";
      nested([&] {
        expr(f.lo.get());
        expr(f.hi.get());
        expr(f.step.get());
        expr(f.iter.get());
        block(f.body);
      });
      break;
    }
    case Stmt::Kind::Invoke: {
      auto &i = cast<InvokeStmt>(s);
      line(s.loc()) << "Invoke " << (i.name.empty() ? "<unnamed>" : i.name) << "\n";
      nested([&] { block(i.body); });
      break;
    }
    }
  }

  void expr(const Expr *e) {
    if (!e)
      return;
    switch (e->getKind()) {
    case Expr::Kind::Name:
      line(e->loc()) << "Name " << cast<NameExpr>(e)->name << "\n";
      break;
    case Expr::Kind::IntLit:
      line(e->loc()) << "Int " << cast<IntLitExpr>(e)->value << "\n";
      break;
    case Expr::Kind::FloatLit:
      line(e->loc()) << "Float " << cast<FloatLitExpr>(e)->value << "\n";
      break;
    case Expr::Kind::StringLit:
      line(e->loc()) << "String \"" << cast<StringLitExpr>(e)->value << "\"\n";
      break;
    case Expr::Kind::BoolLit:
      line(e->loc()) << "Bool " << (cast<BoolLitExpr>(e)->value ? "true" : "false") << "\n";
      break;
    case Expr::Kind::Member: {
      auto *m = cast<MemberExpr>(e);
      line(e->loc()) << "Member ." << m->member << "\n";
      nested([&] { expr(m->base.get()); });
      break;
    }
    case Expr::Kind::Index: {
      auto *ix = cast<IndexExpr>(e);
      line(e->loc()) << "Index\n";
      nested([&] {
        expr(ix->base.get());
        for (const Subscript &s : ix->subscripts) {
          static const char *const kinds[] = {"Subscript", "Slice", "NewAxis", "Wildcard"};
          line(s.loc) << kinds[int(s.kind)] << "\n";
          nested([&] {
            expr(s.index.get());
            expr(s.lo.get());
            expr(s.hi.get());
            expr(s.stride.get());
          });
        }
      });
      break;
    }
    case Expr::Kind::Call: {
      auto *c = cast<CallExpr>(e);
      line(e->loc()) << "Call\n";
      nested([&] {
        expr(c->callee.get());
        for (const Arg &a : c->args) {
          if (!a.keyword.empty())
            line(a.loc) << "Keyword " << a.keyword << "\n";
          expr(a.value.get());
        }
      });
      break;
    }
    case Expr::Kind::Unary: {
      auto *u = cast<UnaryExpr>(e);
      line(e->loc()) << "Unary " << (u->op == UnaryOp::Neg ? "-" : "not") << "\n";
      nested([&] { expr(u->operand.get()); });
      break;
    }
    case Expr::Kind::Binary: {
      auto *b = cast<BinaryExpr>(e);
      line(e->loc()) << "Binary " << spelling(b->op) << "\n";
      nested([&] {
        expr(b->lhs.get());
        expr(b->rhs.get());
      });
      break;
    }
    case Expr::Kind::List: {
      auto *l = cast<ListExpr>(e);
      line(e->loc()) << (l->tuple ? "Tuple\n" : "List\n");
      nested([&] {
        for (const ExprPtr &item : l->items)
          expr(item.get());
      });
      break;
    }
    }
  }

  llvm::raw_ostream &os;
  int depth = 0;
};

} // namespace

void print(const Program &program, llvm::raw_ostream &os) { Printer(os).program(program); }

} // namespace nnsc::ast

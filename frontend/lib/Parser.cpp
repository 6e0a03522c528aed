//===- Parser.cpp - nns source parser ---------------------------*- C++ -*-===//
//
// The only file that includes ANTLR-generated headers: it runs the generated parser, turns
// syntax errors into MLIR diagnostics and converts the parse tree into the owned AST.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Frontend/Parser.h"

#include "NNSLexer.h"
#include "NNSParser.h"
#include "antlr4-runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSwitch.h"

#include <cerrno>
#include <cstdlib>

using namespace mlir;
using G = nnsc::grammar::NNSParser;

namespace nnsc {
namespace {

/// Forwards ANTLR syntax errors to the MLIR diagnostic engine with the source location.
class DiagnosticErrorListener : public antlr4::BaseErrorListener {
public:
  DiagnosticErrorListener(MLIRContext &context, StringRef fileName)
      : context(context), fileName(fileName) {}

  void syntaxError(antlr4::Recognizer *, antlr4::Token *offending, size_t line,
                   size_t charPositionInLine, const std::string &msg, std::exception_ptr) override {
    // ANTLR columns are 0-based, MLIR's 1-based.
    Location loc = FileLineColLoc::get(&context, fileName, line, charPositionInLine + 1);
    InFlightDiagnostic diag = emitError(loc);
    diag << "syntax error: " << msg;
    // Newlines inside brackets do not end a statement, so a bracket left open surfaces as an
    // error lines later; point back at it.
    if (antlr4::Token *open = unclosedBracket(offending); open && open->getLine() < line)
      diag.attachNote(FileLineColLoc::get(&context, fileName, open->getLine(),
                                          open->getCharPositionInLine() + 1))
          << "the '" << open->getText() << "' opened here is not closed";
    ++numErrors;
  }

  unsigned numErrors = 0;
  /// The parser's tokens, to find brackets still open at an error.
  antlr4::CommonTokenStream *tokens = nullptr;

private:
  /// The innermost bracket still open before `offending`, if any.
  antlr4::Token *unclosedBracket(antlr4::Token *offending) {
    if (!tokens || !offending || offending->getTokenIndex() == size_t(-1))
      return nullptr;
    std::vector<antlr4::Token *> open;
    for (size_t i = 0; i < offending->getTokenIndex() && i < tokens->size(); ++i) {
      antlr4::Token *t = tokens->get(i);
      switch (t->getType()) {
      case grammar::NNSLexer::LPAREN:
      case grammar::NNSLexer::LBRACK:
        open.push_back(t);
        break;
      case grammar::NNSLexer::RPAREN:
      case grammar::NNSLexer::RBRACK:
        if (!open.empty())
          open.pop_back();
        break;
      default:
        break;
      }
    }
    return open.empty() ? nullptr : open.back();
  }

  MLIRContext &context;
  std::string fileName;
};

/// Builds the AST from a parse tree that has no syntax errors. Literal values that do not fit
/// are reported here, as they are still source errors.
class ASTBuilder {
public:
  ASTBuilder(MLIRContext &context, StringRef fileName) : context(context), fileName(fileName) {}

  ast::Program program(G::ProgramContext *ctx) {
    ast::Program result;
    for (G::TopDeclContext *decl : ctx->topDecl()) {
      if (G::ParamDeclContext *p = decl->paramDecl())
        result.params.push_back(param(p));
      else
        result.traces.push_back(trace(decl->traceDecl()));
    }
    return result;
  }

  bool failed = false;

private:
  Location loc(antlr4::Token *token) {
    return FileLineColLoc::get(&context, fileName, token->getLine(),
                               token->getCharPositionInLine() + 1);
  }
  Location loc(antlr4::ParserRuleContext *ctx) { return loc(ctx->getStart()); }

  ast::ParamDecl param(G::ParamDeclContext *ctx) {
    ast::ParamDecl decl{loc(ctx), ctx->name->getText(), typeExpr(ctx->typeExpr()), nullptr, {}};
    if (ctx->init)
      decl.init = expr(ctx->init);
    return decl;
  }

  ast::TypeExpr typeExpr(G::TypeExprContext *ctx) {
    ast::TypeExpr type{loc(ctx), ctx->elem->getText(), {}};
    for (G::DimContext *d : ctx->dims) {
      ast::TypeDim dim{loc(d), std::nullopt, ""};
      if (d->INT())
        dim.size = parseInt(d->INT()->getSymbol());
      else
        dim.name = d->getText();
      type.dims.push_back(std::move(dim));
    }
    return type;
  }

  ast::TraceDecl trace(G::TraceDeclContext *ctx) {
    return {loc(ctx), ctx->name ? ctx->name->getText() : "", block(ctx->block())};
  }

  ast::Block block(G::BlockContext *ctx) {
    ast::Block result{loc(ctx), {}};
    for (G::StmtContext *s : ctx->stmt())
      result.stmts.push_back(stmt(s));
    return result;
  }

  ast::StmtPtr stmt(G::StmtContext *ctx) {
    if (G::IfStmtContext *s = ctx->ifStmt())
      return ifStmt(s);
    if (G::ForStmtContext *s = ctx->forStmt()) {
      ast::ExprPtr lo, hi, step, iter;
      if (s->range) {
        lo = expr(s->range->lo);
        hi = expr(s->range->hi);
        if (s->range->step)
          step = expr(s->range->step);
      } else {
        iter = expr(s->iter);
      }
      return std::make_unique<ast::ForStmt>(loc(s), s->var->getText(), loc(s->var), std::move(lo),
                                            std::move(hi), std::move(step), std::move(iter),
                                            block(s->block()));
    }
    if (G::InvokeStmtContext *s = ctx->invokeStmt())
      return std::make_unique<ast::InvokeStmt>(loc(s), s->name ? s->name->getText() : "",
                                               block(s->block()));
    if (G::AssignStmtContext *s = ctx->assignStmt()) {
      ast::AssignOp op = llvm::StringSwitch<ast::AssignOp>(s->op->getText())
                             .Case("+=", ast::AssignOp::Add)
                             .Case("-=", ast::AssignOp::Sub)
                             .Case("*=", ast::AssignOp::Mul)
                             .Case("/=", ast::AssignOp::Div)
                             .Default(ast::AssignOp::Set);
      return std::make_unique<ast::AssignStmt>(loc(s), expr(s->target), op, expr(s->value));
    }
    G::ExprStmtContext *s = ctx->exprStmt();
    return std::make_unique<ast::ExprStmt>(loc(s), expr(s->expr()));
  }

  ast::StmtPtr ifStmt(G::IfStmtContext *ctx) {
    std::optional<ast::Block> elseBlock;
    if (ctx->elseBlock) {
      elseBlock = block(ctx->elseBlock);
    } else if (ctx->elseIf) {
      ast::Block nested{loc(ctx->elseIf), {}};
      nested.stmts.push_back(ifStmt(ctx->elseIf));
      elseBlock = std::move(nested);
    }
    return std::make_unique<ast::IfStmt>(loc(ctx), expr(ctx->cond), block(ctx->then),
                                         std::move(elseBlock));
  }

  ast::ExprPtr binary(antlr4::Token *opToken, G::ExprContext *lhs, G::ExprContext *rhs) {
    ast::BinaryOp op = llvm::StringSwitch<ast::BinaryOp>(opToken->getText())
                           .Case("+", ast::BinaryOp::Add)
                           .Case("-", ast::BinaryOp::Sub)
                           .Case("*", ast::BinaryOp::Mul)
                           .Case("/", ast::BinaryOp::Div)
                           .Case("//", ast::BinaryOp::FloorDiv)
                           .Case("%", ast::BinaryOp::Mod)
                           .Case("@", ast::BinaryOp::MatMul)
                           .Case("<", ast::BinaryOp::Lt)
                           .Case("<=", ast::BinaryOp::Le)
                           .Case(">", ast::BinaryOp::Gt)
                           .Case(">=", ast::BinaryOp::Ge)
                           .Case("==", ast::BinaryOp::Eq)
                           .Case("!=", ast::BinaryOp::Ne)
                           .Case("and", ast::BinaryOp::And)
                           .Default(ast::BinaryOp::Or);
    // The operator's position, so that `a + b` points at `+`.
    return std::make_unique<ast::BinaryExpr>(loc(opToken), op, expr(lhs), expr(rhs));
  }

  ast::ExprPtr expr(G::ExprContext *ctx) {
    if (auto *e = dynamic_cast<G::PrimaryExprContext *>(ctx))
      return primary(e->primary());
    if (auto *e = dynamic_cast<G::MemberExprContext *>(ctx))
      return std::make_unique<ast::MemberExpr>(loc(e->member), expr(e->expr()),
                                               e->member->getText());
    if (auto *e = dynamic_cast<G::IndexExprContext *>(ctx)) {
      std::vector<ast::Subscript> subs;
      for (G::SubscriptContext *s : e->subscript())
        subs.push_back(subscript(s));
      return std::make_unique<ast::IndexExpr>(loc(e->LBRACK()->getSymbol()), expr(e->expr()),
                                              std::move(subs));
    }
    if (auto *e = dynamic_cast<G::CallExprContext *>(ctx)) {
      std::vector<ast::Arg> args;
      for (G::ArgContext *a : e->arg())
        args.push_back({loc(a), a->key ? a->key->getText() : "", expr(a->expr())});
      return std::make_unique<ast::CallExpr>(loc(e), expr(e->expr()), std::move(args));
    }
    if (auto *e = dynamic_cast<G::NegExprContext *>(ctx))
      return std::make_unique<ast::UnaryExpr>(loc(e), ast::UnaryOp::Neg, expr(e->expr()));
    if (auto *e = dynamic_cast<G::NotExprContext *>(ctx))
      return std::make_unique<ast::UnaryExpr>(loc(e), ast::UnaryOp::Not, expr(e->expr()));
    if (auto *e = dynamic_cast<G::MulExprContext *>(ctx))
      return binary(e->op, e->lhs, e->rhs);
    if (auto *e = dynamic_cast<G::AddExprContext *>(ctx))
      return binary(e->op, e->lhs, e->rhs);
    if (auto *e = dynamic_cast<G::CmpExprContext *>(ctx))
      return binary(e->op, e->lhs, e->rhs);
    if (auto *e = dynamic_cast<G::AndExprContext *>(ctx))
      return binary(e->op, e->lhs, e->rhs);
    auto *e = dynamic_cast<G::OrExprContext *>(ctx);
    assert(e && "unhandled expression alternative");
    return binary(e->op, e->lhs, e->rhs);
  }

  ast::Subscript subscript(G::SubscriptContext *ctx) {
    ast::Subscript sub{
        ast::Subscript::Kind::Wildcard, loc(ctx), nullptr, nullptr, nullptr, nullptr};
    if (auto *s = dynamic_cast<G::IndexSubContext *>(ctx)) {
      sub.kind = ast::Subscript::Kind::Index;
      sub.index = expr(s->expr());
      // `x[:, None]` adds a dimension of size 1, as in torch.
      if (auto *n = dyn_cast<ast::NameExpr>(sub.index.get()); n && n->name == "None") {
        sub.kind = ast::Subscript::Kind::NewAxis;
        sub.index = nullptr;
      }
    } else if (auto *s = dynamic_cast<G::SliceSubContext *>(ctx)) {
      sub.kind = ast::Subscript::Kind::Slice;
      if (s->lo)
        sub.lo = expr(s->lo);
      if (s->hi)
        sub.hi = expr(s->hi);
      if (s->stride)
        sub.stride = expr(s->stride);
    }
    return sub;
  }

  ast::ExprPtr primary(G::PrimaryContext *ctx) {
    if (auto *p = dynamic_cast<G::NameRefContext *>(ctx)) {
      // Python's spellings of the booleans (`keepdim=True`) mean the same as the language's.
      if (p->getText() == "True" || p->getText() == "False")
        return std::make_unique<ast::BoolLitExpr>(loc(p), p->getText() == "True");
      return std::make_unique<ast::NameExpr>(loc(p), p->getText());
    }
    if (auto *p = dynamic_cast<G::IntLitContext *>(ctx))
      return std::make_unique<ast::IntLitExpr>(loc(p), parseInt(p->INT()->getSymbol()));
    if (auto *p = dynamic_cast<G::FloatLitContext *>(ctx))
      return std::make_unique<ast::FloatLitExpr>(loc(p),
                                                 std::strtod(p->getText().c_str(), nullptr));
    if (auto *p = dynamic_cast<G::StringLitContext *>(ctx)) {
      std::string text = p->getText();
      return std::make_unique<ast::StringLitExpr>(loc(p), text.substr(1, text.size() - 2));
    }
    if (auto *p = dynamic_cast<G::BoolLitContext *>(ctx))
      return std::make_unique<ast::BoolLitExpr>(loc(p), p->getText() == "true");
    if (auto *p = dynamic_cast<G::ListLitContext *>(ctx))
      return list(loc(p), p->items, false);
    auto *p = dynamic_cast<G::ParenExprContext *>(ctx);
    assert(p && "unhandled primary alternative");
    if (p->items.size() == 1 && !p->comma)
      return expr(p->items[0]);
    return list(loc(p), p->items, true);
  }

  ast::ExprPtr list(Location at, const std::vector<G::ExprContext *> &items, bool tuple) {
    std::vector<ast::ExprPtr> values;
    for (G::ExprContext *item : items)
      values.push_back(expr(item));
    return std::make_unique<ast::ListExpr>(at, std::move(values), tuple);
  }

  int64_t parseInt(antlr4::Token *token) {
    std::string text = token->getText();
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) {
      emitError(loc(token)) << "integer literal '" << text << "' does not fit in 64 bits";
      failed = true;
      return 0;
    }
    return value;
  }

  MLIRContext &context;
  std::string fileName;
};

} // namespace

std::optional<ast::Program> parseProgram(llvm::SourceMgr &sourceMgr, MLIRContext &context) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  try {
    // Decoding throws on malformed UTF-8, so the whole pipeline is inside the try.
    antlr4::ANTLRInputStream input(buffer->getBuffer().data(), buffer->getBufferSize());
    grammar::NNSLexer lexer(&input);
    antlr4::CommonTokenStream tokens(&lexer);
    G parser(&tokens);

    DiagnosticErrorListener listener(context, buffer->getBufferIdentifier());
    listener.tokens = &tokens;
    lexer.removeErrorListeners();
    lexer.addErrorListener(&listener);
    parser.removeErrorListeners();
    parser.addErrorListener(&listener);

    G::ProgramContext *tree = parser.program();
    if (listener.numErrors != 0)
      return std::nullopt;
    ASTBuilder builder(context, buffer->getBufferIdentifier());
    ast::Program program = builder.program(tree);
    if (builder.failed)
      return std::nullopt;
    return program;
  } catch (const std::exception &e) {
    // The default error strategy recovers instead of throwing; what remains is input the
    // runtime cannot read at all (malformed UTF-8).
    emitError(FileLineColLoc::get(&context, buffer->getBufferIdentifier(), 1, 1))
        << "syntax error: the input is not valid UTF-8 (" << e.what() << ")";
    return std::nullopt;
  }
}

} // namespace nnsc

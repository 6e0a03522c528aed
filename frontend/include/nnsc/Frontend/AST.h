//===- AST.h - the owned syntax tree of an nns program ----------*- C++ -*-===//
//
// Built by the parser (the ANTLR parse tree never leaves Parser.cpp); every node has the
// mlir::Location of its first token. Sema fills the `sema` annotations of expressions and
// statements, which MLIRGen reads.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_AST_H
#define NNSC_FRONTEND_AST_H

#include "nnsc/Frontend/ValueType.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnsc::ast {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// The built-in functions and methods (PyTorch names), plus the trace statements written as
/// calls.
enum class Builtin {
  Sum,
  Mean,
  Max,
  Min,
  ArgMax,
  ArgMin,
  Norm,
  Softmax,
  LogSoftmax,
  Exp,
  Log,
  Sqrt,
  Abs,
  Relu,
  Gelu,
  Silu,
  Tanh,
  Sigmoid,
  Clamp,
  Where,
  ZerosLike,
  OnesLike,
  TopK,
  Float,
  Unsqueeze,
  View,
  Reshape,
  Transpose,
  Outer,
  Expand,
  BroadcastTo,
  Cat,
  Stack,
  Save,
  Skip,
  Stop,
  Finish,
  Cache
};

/// What an expression denotes, decided by Sema.
enum class Entity {
  Unresolved,
  Value,    ///< a tensor value (literal, local, param, step, computed)
  Site,     ///< a site (read when used as a value, written when assigned)
  Module,   ///< a module of the model (callable, skippable, has sites)
  Layers,   ///< `model.layers` before indexing
  Function, ///< a built-in function name (`sum`, `where`, `cache`, ...)
  Method,   ///< `value.name` of a built-in method, awaiting its call
  Steps,    ///< `steps`, iterable only by a for loop
};

/// How a name that denotes a value gets its value; Constant: a model dimension name (`hidden`,
/// `layers`), whose value is ExprSema::constant.
enum class NameSource { None, Local, Param, Step, Constant };

/// Sema's annotations on an expression.
struct ExprSema {
  Entity entity = Entity::Unresolved;
  ValueType type;
  /// Site or module index in the Architecture, for Entity::Site / Entity::Module. A Value
  /// with a site is the read of that site; a Value with a module is a module call.
  int site = -1;
  int module = -1;
  Builtin builtin = Builtin::Sum;
  NameSource source = NameSource::None;
  /// Compile-time integer value (literals, loop variables, arithmetic on them).
  std::optional<int64_t> constant;
  /// Compile-time float value of literals, for param defaults.
  std::optional<double> constantFloat;
  /// The dimension of a reduction, softmax or unsqueeze (non-negative), the first dimension
  /// of a transpose, or k of topk.
  int64_t intArg = 0;
  /// The second dimension of a transpose.
  int64_t intArg2 = 0;
  /// A reduction without `dim`: over every dimension, as in torch.
  bool allDims = false;
  /// A reduction with `keepdim=True`: the reduced dimensions stay, with size 1.
  bool keepDim = false;
  /// Sites listed by a cache(...) call, wildcards expanded, in firing order.
  std::vector<int> cacheSites;
  /// The name a `.save()` call saves under (with unroll suffixes, without the step suffix).
  std::string saveName;
};

class Expr {
public:
  enum class Kind {
    Name,
    IntLit,
    FloatLit,
    StringLit,
    BoolLit,
    Member,
    Index,
    Call,
    Unary,
    Binary,
    List
  };

  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  mlir::Location loc() const { return location; }

  ExprSema sema;

protected:
  Expr(Kind kind, mlir::Location loc) : kind(kind), location(loc) {}

private:
  Kind kind;
  mlir::Location location;
};

using ExprPtr = std::unique_ptr<Expr>;

class NameExpr : public Expr {
public:
  NameExpr(mlir::Location loc, std::string name) : Expr(Kind::Name, loc), name(std::move(name)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }
  std::string name;
};

class IntLitExpr : public Expr {
public:
  IntLitExpr(mlir::Location loc, int64_t value) : Expr(Kind::IntLit, loc), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::IntLit; }
  int64_t value;
};

class FloatLitExpr : public Expr {
public:
  FloatLitExpr(mlir::Location loc, double value) : Expr(Kind::FloatLit, loc), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::FloatLit; }
  double value;
};

class StringLitExpr : public Expr {
public:
  StringLitExpr(mlir::Location loc, std::string value)
      : Expr(Kind::StringLit, loc), value(std::move(value)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::StringLit; }
  std::string value;
};

class BoolLitExpr : public Expr {
public:
  BoolLitExpr(mlir::Location loc, bool value) : Expr(Kind::BoolLit, loc), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::BoolLit; }
  bool value;
};

/// `base.member`: a submodule, an accessor (`output`, `input`) or a method.
class MemberExpr : public Expr {
public:
  MemberExpr(mlir::Location loc, ExprPtr base, std::string member)
      : Expr(Kind::Member, loc), base(std::move(base)), member(std::move(member)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Member; }
  ExprPtr base;
  std::string member;
};

/// One entry of `x[...]`: an index, a slice `lo:hi:stride`, `None` (a new dimension of size 1)
/// or the layer wildcard `*`.
struct Subscript {
  enum class Kind { Index, Slice, NewAxis, Wildcard };
  Kind kind;
  mlir::Location loc;
  ExprPtr index;          // Kind::Index
  ExprPtr lo, hi, stride; // Kind::Slice, each optional
};

class IndexExpr : public Expr {
public:
  IndexExpr(mlir::Location loc, ExprPtr base, std::vector<Subscript> subscripts)
      : Expr(Kind::Index, loc), base(std::move(base)), subscripts(std::move(subscripts)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Index; }
  ExprPtr base;
  std::vector<Subscript> subscripts;
};

/// A call argument, optionally by keyword (`dim=0`).
struct Arg {
  mlir::Location loc;
  std::string keyword;
  ExprPtr value;
};

class CallExpr : public Expr {
public:
  CallExpr(mlir::Location loc, ExprPtr callee, std::vector<Arg> args)
      : Expr(Kind::Call, loc), callee(std::move(callee)), args(std::move(args)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }
  ExprPtr callee;
  std::vector<Arg> args;
};

enum class UnaryOp { Neg, Not };

class UnaryExpr : public Expr {
public:
  UnaryExpr(mlir::Location loc, UnaryOp op, ExprPtr operand)
      : Expr(Kind::Unary, loc), op(op), operand(std::move(operand)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Unary; }
  UnaryOp op;
  ExprPtr operand;
};

/// FloorDiv and Mod are Python's `//` and `%` on integer constants (Sema folds them).
enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, MatMul, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

/// The source spelling of an operator ("+", "@", "and").
const char *spelling(BinaryOp op);

class BinaryExpr : public Expr {
public:
  BinaryExpr(mlir::Location loc, BinaryOp op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::Binary, loc), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }
  BinaryOp op;
  ExprPtr lhs, rhs;
};

/// A list `[a, b]` or tuple `(a, b)`; only the sequence argument of cat, stack and
/// broadcast_to.
class ListExpr : public Expr {
public:
  ListExpr(mlir::Location loc, std::vector<ExprPtr> items, bool tuple)
      : Expr(Kind::List, loc), items(std::move(items)), tuple(tuple) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::List; }
  std::vector<ExprPtr> items;
  bool tuple;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Block {
  mlir::Location loc;
  std::vector<StmtPtr> stmts;
};

class Stmt {
public:
  enum class Kind { Assign, Expr, If, For, Invoke };

  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  mlir::Location loc() const { return location; }

  /// Set when the statement is a copy made by unrolling `for i in a..b`: ".<i>" per enclosing
  /// unrolled loop, appended to the names it saves.
  std::string unrollSuffix;

protected:
  Stmt(Kind kind, mlir::Location loc) : kind(kind), location(loc) {}

private:
  Kind kind;
  mlir::Location location;
};

enum class AssignOp { Set, Add, Sub, Mul, Div };

/// `target = value`, `target += value`, ...
class AssignStmt : public Stmt {
public:
  AssignStmt(mlir::Location loc, ExprPtr target, AssignOp op, ExprPtr value)
      : Stmt(Kind::Assign, loc), target(std::move(target)), op(op), value(std::move(value)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }
  ExprPtr target;
  AssignOp op;
  ExprPtr value;
};

class ExprStmt : public Stmt {
public:
  ExprStmt(mlir::Location loc, ExprPtr expr) : Stmt(Kind::Expr, loc), expr(std::move(expr)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Expr; }
  ExprPtr expr;
};

/// Sema's annotations on an `if`.
struct IfSema {
  /// The condition's value when it is known at compile time; only that branch is checked and
  /// generated.
  std::optional<bool> constant;
  /// Names bound before the `if` and rebound in a branch: the results of nns.if.
  std::vector<std::string> rebound;
};

class IfStmt : public Stmt {
public:
  IfStmt(mlir::Location loc, ExprPtr cond, Block thenBlock, std::optional<Block> elseBlock)
      : Stmt(Kind::If, loc), cond(std::move(cond)), thenBlock(std::move(thenBlock)),
        elseBlock(std::move(elseBlock)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::If; }
  ExprPtr cond;
  Block thenBlock;
  /// `else if` is an else block holding one IfStmt.
  std::optional<Block> elseBlock;
  IfSema sema;
};

/// `for VAR in lo..hi { }` (unrolled by Sema) or `for VAR in steps[...] { }`.
class ForStmt : public Stmt {
public:
  ForStmt(mlir::Location loc, std::string var, mlir::Location varLoc, ExprPtr lo, ExprPtr hi,
          ExprPtr step, ExprPtr iter, Block body)
      : Stmt(Kind::For, loc), var(std::move(var)), varLoc(varLoc), lo(std::move(lo)),
        hi(std::move(hi)), step(std::move(step)), iter(std::move(iter)), body(std::move(body)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::For; }
  bool isRange() const { return lo != nullptr; }

  std::string var;
  mlir::Location varLoc;
  ExprPtr lo, hi; // range form
  ExprPtr step;   // range form, optional (`a..b:step`)
  ExprPtr iter;   // steps form
  Block body;
  /// Steps selected by the loop, set by Sema: start, optional stop, stride.
  int64_t start = 0;
  std::optional<int64_t> stop;
  int64_t stride = 1;
};

/// Sema's annotations on an invoke: its position and the names later code may use.
struct InvokeSema {
  int index = 0;
  std::vector<std::string> exports;
};

class InvokeStmt : public Stmt {
public:
  InvokeStmt(mlir::Location loc, std::string name, Block body)
      : Stmt(Kind::Invoke, loc), name(std::move(name)), body(std::move(body)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Invoke; }
  std::string name;
  Block body;
  InvokeSema sema;
};

//===----------------------------------------------------------------------===//
// Top level
//===----------------------------------------------------------------------===//

/// A dimension of a param type: an integer or a model dimension name.
struct TypeDim {
  mlir::Location loc;
  std::optional<int64_t> size;
  std::string name;
};

struct TypeExpr {
  mlir::Location loc;
  std::string elem;
  std::vector<TypeDim> dims;
};

struct ParamDecl {
  mlir::Location loc;
  std::string name;
  TypeExpr type;
  ExprPtr init;
  /// Set by Sema.
  ValueType resolved;
};

struct TraceDecl {
  mlir::Location loc;
  /// Empty for the unnamed trace.
  std::string name;
  Block body;
};

struct Program {
  std::vector<ParamDecl> params;
  std::vector<TraceDecl> traces;
};

/// Prints the tree, one node per line with its line:col, for `nnsc -emit=ast`.
void print(const Program &program, llvm::raw_ostream &os);

} // namespace nnsc::ast

#endif // NNSC_FRONTEND_AST_H

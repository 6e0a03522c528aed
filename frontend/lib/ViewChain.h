//===- ViewChain.h - writes through views of a site -------------*- C++ -*-===//
//
// Internal to the frontend. `SITE.view(-1, heads, head_dim)[:, 3] = 0` writes through a view,
// as in torch: the assignment target is a chain of shape operations (view, reshape, unsqueeze,
// transpose, `.T`) applied to a site, then optionally indexed. Sema checks such a target and
// MLIRGen turns it into a read of the site, the chain forwards, the scatter, the chain backwards
// and a write of the whole site.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_VIEWCHAIN_H
#define NNSC_FRONTEND_VIEWCHAIN_H

#include "nnsc/Frontend/AST.h"

namespace nnsc {

struct ViewChain {
  /// The shape operations, outermost first: CallExprs of a method, or the MemberExpr `.T`.
  std::vector<ast::Expr *> steps;
  /// What the innermost step applies to (a site, once Sema resolved it).
  ast::Expr *base = nullptr;
};

/// The chain of view operations that `e` is, by its syntax; nullopt if `e` is not a call of a
/// view method (or `.T`).
inline std::optional<ViewChain> viewChain(ast::Expr &e) {
  ViewChain chain;
  ast::Expr *at = &e;
  while (true) {
    if (auto *call = llvm::dyn_cast<ast::CallExpr>(at)) {
      auto *m = llvm::dyn_cast<ast::MemberExpr>(call->callee.get());
      if (!m || (m->member != "view" && m->member != "reshape" && m->member != "unsqueeze" &&
                 m->member != "transpose"))
        break;
      chain.steps.push_back(at);
      at = m->base.get();
    } else if (auto *m = llvm::dyn_cast<ast::MemberExpr>(at); m && m->member == "T") {
      chain.steps.push_back(at);
      at = m->base.get();
    } else {
      break;
    }
  }
  if (chain.steps.empty())
    return std::nullopt;
  chain.base = at;
  return chain;
}

} // namespace nnsc

#endif // NNSC_FRONTEND_VIEWCHAIN_H

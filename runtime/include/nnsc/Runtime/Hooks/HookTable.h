//===- HookTable.h - one request's bound sites ------------------*- C++ -*-===//
//
// The sites a request binds and the hook each one calls. A request without a table (or with
// an empty one) costs nothing beyond the per-site "is anything bound" test of the batch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_HOOKS_HOOKTABLE_H
#define NNSC_RUNTIME_HOOKS_HOOKTABLE_H

#include "nnsc/Runtime/Hooks/SiteHook.h"
#include "nnsc/Schema/Architecture.h"

#include <vector>

namespace nnsc {

/// Site index -> hook, for one request.
class HookTable {
public:
  explicit HookTable(const schema::Architecture &arch);

  /// Binds `hook` to the site at `path` ("model.layers.3.mlp.output", "logits"); throws
  /// std::invalid_argument for an unknown site.
  void bind(const std::string &path, std::shared_ptr<SiteHook> hook);
  void bind(int site, std::shared_ptr<SiteHook> hook);

  SiteHook *at(int site) const { return hooks[site].get(); }
  int numSites() const { return int(hooks.size()); }
  /// Whether any forward-pass site is bound: such a request computes its whole prompt (its
  /// hooks must see every prompt row) and never shares prefix-cache blocks.
  bool bindsForward() const { return forward; }
  /// A salt unique to this table, so K/V computed under its hooks is never reused by others.
  uint64_t cacheSalt() const { return salt; }

private:
  const schema::Architecture &arch;
  std::vector<std::shared_ptr<SiteHook>> hooks;
  bool forward = false;
  uint64_t salt;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_HOOKS_HOOKTABLE_H

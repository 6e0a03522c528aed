//===- FlagHooks.h - nns-run's own site hooks -------------------*- C++ -*-===//
//
// The hooks nns-run's flags bind on plain (unbundled) requests, no compiler involved:
// --scale SITE=F multiplies a site's value in place, --capture SITE (or "all") keeps its rows
// per request for --save, --dump-logits keeps every step's logits rows. One hook per site: the
// --scale factors first, then the capture, which so sees the scaled value (as a transformers
// hook registered after the replacing one does).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_FLAGHOOKS_H
#define NNSC_TOOLS_NNSRUN_FLAGHOOKS_H

#include "Options.h"

#include "nnsc/Runtime/Hooks/HookTable.h"
#include "nnsc/Schema/Architecture.h"

#include <map>
#include <memory>

namespace nnsrun {

class FlagHooks {
public:
  /// Resolves the flags' site names against `arch`; exits with a message naming a site the
  /// model does not have.
  FlagHooks(const Options &o, const nnsc::schema::Architecture &arch, size_t numPrompts);

  /// Binds the hooks for prompt `prompt` into `table`, creating the table when there is
  /// something to bind and it is null.
  void bind(std::shared_ptr<nnsc::HookTable> &table, size_t prompt);

  /// Writes --dump-logits (logits.<prompt>) and --save (<site>.<request> and each site's
  /// firing order, <site>.order) as safetensors, for the flags given.
  void write(const Options &o) const;

private:
  void add(int site, std::shared_ptr<nnsc::SiteHook> hook);

  const nnsc::schema::Architecture &arch;
  bool dumpLogits;
  std::map<int, std::shared_ptr<nnsc::SiteHook>> siteHooks;
  /// --capture: rows of every step, per site and request, and the sequence number of each
  /// site's first firing (its place in firing order).
  std::map<std::string, std::vector<torch::Tensor>> capturedRows;
  std::map<std::string, int64_t> firstFiring;
  int64_t fired = 0;
  /// --dump-logits: per prompt, the logits rows of each step.
  std::vector<std::vector<torch::Tensor>> logits;
};

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_FLAGHOOKS_H

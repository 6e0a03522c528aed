//===- SiteHook.h - what runs at a hook point -------------------*- C++ -*-===//
//
// The runtime side of a hook point. When a site fires, every SiteHook bound to it by a request
// of the batch is called once with the site's whole value and the groups of rows that belong
// to requests bound to that hook (a compiled bundle handles all of its requests in one kernel
// call). A hook reads its rows, and replaces them by writing into them in place: the model
// continues with whatever the rows hold when the hook returns, as with a transformers hook
// that returns a new tensor.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_HOOKS_SITEHOOK_H
#define NNSC_RUNTIME_HOOKS_SITEHOOK_H

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

namespace nnsc {

/// Consecutive rows of a site value that belong to one request at one step.
struct TokenGroup {
  /// First row in the site value and number of rows. Token-level sites index the flat
  /// [total_tokens, ...] batch; lm_head and the logits and samples phases index the rows of
  /// the sequences that sample this step; the result phase has one group over all tokens.
  int64_t tokenStart = 0;
  int64_t tokenCount = 0;
  /// Completion tokens the request had when this step started (0 for its prompt).
  int64_t step = 0;
  /// The request (Sequence id).
  int64_t request = 0;
  /// Position in the request's sequence of the group's first row.
  int64_t firstPosition = 0;
};

/// What a hook asks of a request's life once a step is done.
enum class HookVerdict {
  /// Nothing: the request goes on.
  Continue,
  /// End the request after this step, keeping the token it sampled (`finish()`).
  FinishAfterStep,
  /// End the request now, dropping the token of this step, whose forward pass the hook cut
  /// short (`stop()`, or a failed intervention).
  EndNow,
};

/// A callback bound to sites.
class SiteHook {
public:
  virtual ~SiteHook() = default;
  /// `site` is the index in schema::Architecture::sites(); `value` holds every row of the
  /// batch ([rows, ...] in the compute dtype, int64 for samples and result).
  virtual void run(int site, torch::Tensor &value, std::span<const TokenGroup> groups) = 0;
  /// Whether, at its latest run of `site` (a module's input site), the hook replaced the
  /// module for sequence `request` (`.skip()`): it wrote the module's output into the
  /// request's rows of the input value, and the model makes those rows the module's output.
  virtual bool skipped(int site, int64_t request) const {
    (void)site;
    (void)request;
    return false;
  }
  /// Asked after every step that ran `request` (a Sequence id); plain hooks never end one.
  virtual HookVerdict verdict(int64_t request) const {
    (void)request;
    return HookVerdict::Continue;
  }
  /// Whether a request bound to this hook restarts from its prompt when the scheduler
  /// preempts it (its generated tokens dropped, its hooks told by restart()), rather than
  /// resuming by recomputing its tokens: a hook keeping per-request state across steps would
  /// otherwise see the recomputed positions as new prompt rows. Plain hooks resume.
  virtual bool restartsOnPreemption() const { return false; }
  /// Called when `request` restarts: the hook forgets what it kept for it.
  virtual void restart(int64_t request) { (void)request; }
  /// Called once `request` has ended (finished or aborted) and will never run again: the
  /// hook drops whatever it holds for it, so a long-lived hook (a server's compiled program)
  /// does not grow with every request it served.
  virtual void release(int64_t request) { (void)request; }
};

/// A SiteHook from a function (tests, tools, quick experiments).
using SiteFn =
    std::function<void(int site, torch::Tensor &value, std::span<const TokenGroup> groups)>;
std::shared_ptr<SiteHook> makeSiteHook(SiteFn fn);

} // namespace nnsc

#endif // NNSC_RUNTIME_HOOKS_SITEHOOK_H

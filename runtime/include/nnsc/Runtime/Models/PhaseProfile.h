//===- PhaseProfile.h - opt-in wall-clock totals per forward phase -*- C++ -*-===//
//
// Set NNSC_PROFILE=1 to have the process print, at exit, the wall time spent in each phase
// of the engine's steps (GEMMs, attention, RoPE + KV store, norms, sampler, ...) split by
// prefill and decode steps. Layers with bound hooks are charged like the others; the hooks
// themselves (a bundle's kernels, its saves) are the `hooks` phase. A phase inside another is
// charged to itself only, so the phases add up to the time in them. Without the variable a phase
// costs one predictable branch. The kernels are synchronous on the CPU, so wall time per
// phase is the phase's cost; on CUDA the split is not meaningful (launches are asynchronous).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_MODELS_PHASEPROFILE_H
#define NNSC_RUNTIME_MODELS_PHASEPROFILE_H

#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace nnsc {

/// The phases a step is split into.
enum class Phase {
  Embed,
  Norm,
  QKVProj,
  RopeStore,
  Attention,
  OProj,
  GateUpProj,
  Activation,
  DownProj,
  LMHead,
  Metadata,
  Sampler,
  Hooks,
  Communication,
  NumPhases
};

/// Process-wide totals per phase and step kind; printed at exit when enabled.
class PhaseProfile {
public:
  /// The one instance.
  static PhaseProfile &get() {
    static PhaseProfile profile;
    return profile;
  }

  /// Whether NNSC_PROFILE is set (read once).
  bool enabled() const { return on; }

  /// Marks the step kind that following phases are charged to.
  void setPrefill(bool prefill) { decodeStep = !prefill; }

  /// Adds `ns` nanoseconds to `phase` of the current step kind.
  void add(Phase phase, int64_t ns) { totals[decodeStep][static_cast<size_t>(phase)] += ns; }

  /// Counts one step of the current kind with `tokens` tokens.
  void countStep(int64_t tokens) {
    ++steps[decodeStep];
    stepTokens[decodeStep] += tokens;
  }

  ~PhaseProfile() {
    if (!on)
      return;
    static const char *names[] = {
        "embed",   "rmsnorm",   "qkv_proj", "rope+kv_store", "attention", "o_proj", "gate_up_proj",
        "silu*up", "down_proj", "lm_head",  "metadata",      "sampler",   "hooks",  "tp_comm"};
    for (int kind = 0; kind < 2; ++kind) {
      int64_t sum = 0;
      for (int64_t t : totals[kind])
        sum += t;
      std::fprintf(stderr, "profile %s: %lld steps, %lld tokens, %.3f s in phases\n",
                   kind ? "decode" : "prefill", static_cast<long long>(steps[kind]),
                   static_cast<long long>(stepTokens[kind]), double(sum) * 1e-9);
      for (size_t p = 0; p < kNumPhases; ++p)
        if (totals[kind][p] > 0)
          std::fprintf(stderr, "  %-14s %8.3f s  %5.1f%%\n", names[p],
                       double(totals[kind][p]) * 1e-9,
                       sum ? 100.0 * double(totals[kind][p]) / double(sum) : 0.0);
    }
  }

private:
  static constexpr size_t kNumPhases = static_cast<size_t>(Phase::NumPhases);

  PhaseProfile() : on(RuntimeOptions::get().profile) {}

  bool on;
  bool decodeStep = false;
  std::array<std::array<int64_t, kNumPhases>, 2> totals{};
  std::array<int64_t, 2> steps{}, stepTokens{};
};

/// Charges the wall time of its scope to a phase when profiling is on, except the time of
/// phases nested in it on the same thread (a hook fired inside a norm is `hooks`, not both).
class ScopedPhase {
public:
  explicit ScopedPhase(Phase phase) : phase(phase), on(PhaseProfile::get().enabled()) {
    if (!on)
      return;
    start = Clock::now();
    outer = active();
    if (outer)
      outer->charge(start);
    active() = this;
  }
  ~ScopedPhase() {
    if (!on)
      return;
    const Clock::time_point end = Clock::now();
    charge(end);
    active() = outer;
    if (outer)
      outer->start = end;
  }
  ScopedPhase(const ScopedPhase &) = delete;
  ScopedPhase &operator=(const ScopedPhase &) = delete;

private:
  using Clock = std::chrono::steady_clock;

  /// Adds the time since `start` up to `now` (a nested phase begins, or this one ends).
  void charge(Clock::time_point now) {
    PhaseProfile::get().add(
        phase, std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count());
  }
  static ScopedPhase *&active() {
    static thread_local ScopedPhase *current = nullptr;
    return current;
  }

  Phase phase;
  bool on;
  ScopedPhase *outer = nullptr;
  Clock::time_point start;
};

/// Runs `f` with its wall time charged to `phase`: `timed(Phase::Norm, [&] { ... })`.
template <typename F> decltype(auto) timed(Phase phase, F &&f) {
  ScopedPhase scope(phase);
  return f();
}

} // namespace nnsc

#endif // NNSC_RUNTIME_MODELS_PHASEPROFILE_H

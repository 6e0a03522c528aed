//===- BundleRun.h - nns-run's requests, bound to their programs -*- C++ -*-===//
//
// --trace / --bundle: the program is loaded (or compiled) and checked against the model, the
// trace chosen and its params bound before any request runs (nnsc/Session). A trace with N
// invokes takes the prompts N at a time, in order: each N consecutive prompts are one request,
// prompt k of the N running as invoke k, all N in the same forward passes. --edit binds its
// program to every request first. --save-dir: per request, in prompt order,
// <i>.safetensors with its saves and <i>.json with its prompt(s) and completion(s).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_BUNDLERUN_H
#define NNSC_TOOLS_NNSRUN_BUNDLERUN_H

#include "FlagHooks.h"
#include "Options.h"

#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Session/ProgramRegistry.h"

#include <memory>

namespace nnsrun {

/// The trace every bundled request of the run binds (or the edit every request binds), and
/// the state each prompt's request reports to (null for a prompt that ran without it).
struct BundledRun {
  nnsc::session::BoundTrace trace;
  /// One per prompt; the prompts of one multi-invoke request share theirs.
  std::vector<std::shared_ptr<nnsc::BundleRequest>> requests;
};

/// Where nns-run's programs come from: the model's bundles, and .nns files compiled
/// in-process (for --device cuda with the kernels' device copies) in a build with the
/// compiler.
std::unique_ptr<nnsc::session::ProgramRegistry>
makeProgramRegistry(const Options &o, std::shared_ptr<const nnsc::ModelBackend> backend);

/// --trace FILE.nns or --bundle FILE.nnsb with its --param values, checked against the
/// prompts; null without either. Exits with a message when anything is wrong.
std::unique_ptr<BundledRun> loadTrace(const Options &o, nnsc::session::ProgramRegistry &programs);

/// --edit FILE.nns|FILE.nnsb with its --edit-param values; null without --edit. Exits with a
/// message when anything is wrong, or when the edit's trace has invokes.
std::unique_ptr<BundledRun> loadEdit(const Options &o, nnsc::session::ProgramRegistry &programs);

/// Queues every prompt on `engine` (nnsc::session::submit): bound to the trace unless it runs
/// plain, to the edit either way, and, without a trace, to nns-run's own flag hooks. A request
/// the engine refuses exits with its prompt's index and the reason.
void queueRequests(const Options &o, nnsc::LLMEngine &engine, BundledRun *bound, BundledRun *edit,
                   FlagHooks &flagHooks);

/// Prints the error of every prompt whose edit failed; returns their number.
int reportEditErrors(const BundledRun *edit);

/// Writes DIR/<i>.safetensors and DIR/<i>.json for every request (results sorted by engine
/// id, which is prompt order), prints each failed request's error and returns their number.
int writeResults(const std::string &dir, const std::vector<Prompt> &prompts,
                 const std::vector<nnsc::RequestResult> &results, const BundledRun *bound,
                 const nnsc::tokenizer::Tokenizer *tok);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_BUNDLERUN_H

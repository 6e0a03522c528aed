//===- BundleRun.h - nns-run's bundle requests and results ------*- C++ -*-===//
//
// --trace / --bundle: the bundle is loaded and checked against the model, the trace chosen
// and its params bound before any request runs; every bundled request then gets its own
// BundleRequest on one shared BundleHook. A trace with N invokes takes the prompts N at a
// time, in order: each N consecutive prompts are one request, prompt k of the N running as
// invoke k, all N in the same forward passes. --save-dir: per request, in prompt order,
// <i>.safetensors with its saves and <i>.json with its prompt(s) and completion(s).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_BUNDLERUN_H
#define NNSC_TOOLS_NNSRUN_BUNDLERUN_H

#include "Options.h"

#include "nnsc/Runtime/Bundle/BundleHook.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <memory>
#include <optional>

namespace nnsrun {

/// The trace every bundled request of the run binds (or the edit every request binds).
struct BoundTrace {
  std::shared_ptr<nnsc::Bundle> bundle;
  std::shared_ptr<nnsc::BundleHook> hook;
  /// The model the bundle was checked against (request hook tables are built on it).
  std::shared_ptr<const nnsc::CausalLM> model;
  std::vector<torch::Tensor> params;
  /// Prompts per request: the trace's invokes, or 1.
  size_t invokes = 1;
  /// One per prompt (the prompts of one multi-invoke request share it; an edit has one per
  /// prompt); null for a plain request.
  std::vector<std::shared_ptr<nnsc::BundleRequest>> requests;
  /// The prompts of the multi-invoke request being gathered, with their sampling params (a
  /// prompt's own max_tokens).
  std::vector<std::vector<int32_t>> pending;
  std::vector<nnsc::SamplingParams> pendingParams;
};

/// Compiles (--trace; with --target=cuda for a device backend) or loads (--bundle) the
/// bundle, checks it against `backend`'s model, picks the trace and binds the params; exits with a
/// message when anything is wrong. Null without
/// --trace or --bundle.
std::unique_ptr<BoundTrace> loadTrace(const Options &o, const nnsc::ModelBackend &backend);

/// Compiles (.nns) or loads --edit with its --edit-param values; null without --edit. Exits
/// with a message when anything is wrong, or when the edit's trace has invokes (an edit
/// applies to each request on its own).
std::unique_ptr<BoundTrace> loadEdit(const Options &o, const nnsc::ModelBackend &backend);

/// Binds the edit, if any, into `table` (before anything else is bound there, so it runs
/// first at every site) and returns the state it keeps for the request; null without an edit.
std::shared_ptr<nnsc::BundleRequest> bindEdit(BoundTrace *edit, nnsc::HookTable &table);
/// Attaches that state to engine sequence `id`, the request of prompt `prompt`.
void attachEdit(BoundTrace *edit, int64_t id, size_t prompt,
                std::shared_ptr<nnsc::BundleRequest> request);

/// Queues prompt `index` on `engine`, bound to the trace unless it runs plain, and to the
/// edit (null for none) either way. With invokes, the last prompt of each group queues the
/// whole group.
void addBundledRequest(BoundTrace &bound, BoundTrace *edit, nnsc::LLMEngine &engine,
                       const Prompt &prompt, size_t index, const nnsc::SamplingParams &params);

/// Prints the error of every prompt whose edit failed; returns their number.
int reportEditErrors(const BoundTrace *edit);

/// Writes DIR/<i>.safetensors and DIR/<i>.json for every request (results sorted by engine
/// id, which is prompt order), prints each failed request's error and returns their number.
int writeResults(const std::string &dir, const std::vector<Prompt> &prompts,
                 const std::vector<nnsc::RequestResult> &results, const BoundTrace *bound,
                 const nnsc::tokenizer::Tokenizer *tok);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_BUNDLERUN_H

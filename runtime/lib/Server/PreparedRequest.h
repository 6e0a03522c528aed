//===- PreparedRequest.h - a request ready for the engine -------*- C++ -*-===//
//
// What a generation handler makes of a request body before the engine sees it: the checked
// fields, the prompts as token ids, the program and trace it binds with its params, and the
// sampling parameters with max_tokens resolved against the context. Every refusal happens
// here, as an ApiError, so that a request the engine admits is one it can run.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_PREPAREDREQUEST_H
#define NNSC_SERVER_PREPAREDREQUEST_H

#include "nnsc/Server/EngineLoop.h"
#include "nnsc/Server/OpenAIServer.h"
#include "nnsc/Server/Protocol.h"
#include "nnsc/Server/RankLink.h"

#include <optional>
#include <string>
#include <vector>

namespace nnsc::server {

struct PreparedRequest {
  GenerationRequest request;
  /// One per choice: the prompts of a batch, or the invokes of a multi-invoke trace.
  std::vector<std::vector<int32_t>> prompts;
  SamplingParams sampling;
  /// The trace the request binds with its params; no program for a plain request.
  session::BoundTrace bound;
  bool hasProgram() const { return bool(bound.program); }
};

/// Parses and checks `body` for the completions (`chat` false) or chat endpoint. Returns
/// nullopt and fills `error` when anything is wrong.
std::optional<PreparedRequest> prepareRequest(OpenAIServer &server, const std::string &body,
                                              bool chat, ApiError &error);

/// What the engine needs of `prepared` (and what the other ranks of a tensor-parallel server
/// are sent).
ForwardedRequest forwarded(const PreparedRequest &prepared);

/// The engine-thread step that submits the request's sequences (session::submit), bound to
/// `bundle` (the request's program state; null for a plain request) and, first, to the
/// server's `edit` with `edits` (its state, one per prompt; empty without an edit). Rank 0
/// and the other ranks of a tensor-parallel server admit through it alike.
EngineLoop::Admit admitRequest(ForwardedRequest request,
                               const std::optional<session::BoundTrace> &edit,
                               std::shared_ptr<BundleRequest> bundle,
                               std::vector<std::shared_ptr<BundleRequest>> edits);

} // namespace nnsc::server

#endif // NNSC_SERVER_PREPAREDREQUEST_H

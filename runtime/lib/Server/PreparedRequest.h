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

/// The request's body as parsed, and what the engine needs of it (ForwardedRequest: its
/// prompts, one per choice or per invoke of a multi-invoke trace; sampling; the trace it binds
/// with its params, none for a plain request), which is also what the other ranks of a
/// tensor-parallel server are sent.
struct PreparedRequest : ForwardedRequest {
  GenerationRequest request;
  bool hasProgram() const { return bool(bound.program); }
};

/// Parses and checks `body` for the completions (`chat` false) or chat endpoint. Returns
/// nullopt and fills `error` when anything is wrong.
std::optional<PreparedRequest> prepareRequest(OpenAIServer &server, const std::string &body,
                                              bool chat, ApiError &error);

/// A request's states: its program's (null for a plain request) and the server edit's, one
/// per prompt (none without an edit).
struct RequestStates {
  std::shared_ptr<BundleRequest> bundle;
  std::vector<std::shared_ptr<BundleRequest>> edits;
};

/// New states for `request`, its program's saves limited to `maxSaveBytes`.
RequestStates newRequestStates(const ForwardedRequest &request,
                               const std::optional<session::BoundTrace> &edit, size_t maxSaveBytes);

/// The engine-thread step that submits the request's sequences (session::submit) with
/// `states`, bound first to the server's `edit`. Rank 0 and the other ranks of a
/// tensor-parallel server admit through it alike.
EngineLoop::Admit admitRequest(ForwardedRequest request,
                               const std::optional<session::BoundTrace> &edit,
                               const RequestStates &states);

} // namespace nnsc::server

#endif // NNSC_SERVER_PREPAREDREQUEST_H

//===- Handlers.h - nns-serve's request handlers ----------------*- C++ -*-===//
//
// The handlers behind OpenAIServer's routes, and the one way every refusal is written.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_HANDLERS_H
#define NNSC_SERVER_HANDLERS_H

#include "nnsc/Server/OpenAIServer.h"
#include "nnsc/Server/Protocol.h"

#include <httplib.h>

namespace nnsc::server {

/// Answers with `error`'s status and OpenAI error body, and counts it.
void sendError(Metrics &metrics, httplib::Response &res, const ApiError &error);

/// POST /v1/completions (`chat` false) and /v1/chat/completions.
void handleGeneration(OpenAIServer &server, const httplib::Request &req, httplib::Response &res,
                      bool chat);

/// POST /v1/nns/tokenize (`detokenize` false) and /v1/nns/detokenize.
void handleTokenize(OpenAIServer &server, const httplib::Request &req, httplib::Response &res,
                    bool detokenize);

/// GET /v1/nns/sites: the served model's sites and dimension names.
void handleSites(OpenAIServer &server, const httplib::Request &req, httplib::Response &res);

/// Whether `path` is the workbench's: `/` or under `/workbench/`.
bool isWorkbenchPath(std::string_view path);

/// GET / and GET /workbench/...: the workbench page's files (404 for an unknown one).
void handleWorkbenchFile(OpenAIServer &server, const httplib::Request &req, httplib::Response &res);

} // namespace nnsc::server

#endif // NNSC_SERVER_HANDLERS_H

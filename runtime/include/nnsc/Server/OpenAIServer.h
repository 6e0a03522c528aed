//===- OpenAIServer.h - nns-serve's HTTP front ------------------*- C++ -*-===//
//
// The OpenAI-compatible HTTP server (docs/Server.md): /v1/models, /v1/completions,
// /v1/chat/completions (streaming and not), /health, /metrics and /v1/nns/saves/{handle},
// on cpp-httplib's thread pool. Handlers check and prepare a request (parse, compile or look
// up its program, bind its params, tokenize) and hand it to the EngineLoop; they never touch
// the model.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_OPENAISERVER_H
#define NNSC_SERVER_OPENAISERVER_H

#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Server/EngineLoop.h"
#include "nnsc/Server/Metrics.h"
#include "nnsc/Server/SaveHandleStore.h"
#include "nnsc/Session/ProgramRegistry.h"

#include <memory>
#include <optional>
#include <string>

namespace httplib {
class Server;
}

namespace nnsc::server {

/// Limits and switches, each with a safe default (nns-serve's flags).
struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  /// The `model` name requests must use (and /v1/models lists).
  std::string servedModelName;
  /// When set, every request needs "Authorization: Bearer <apiKey>".
  std::string apiKey;
  /// False: only registered bundles, no program source (--no-programs).
  bool allowPrograms = true;
  /// Serve the browser workbench at / (docs/Server.md, "Workbench"); off: --no-workbench.
  bool workbench = true;
  /// Every request in batch-invariant mode (--batch-invariant), as if each sent
  /// "batch_invariant": true (docs/Engine.md, "Batch-invariant mode").
  bool batchInvariant = false;
  size_t maxBodyBytes = 16 << 20;
  size_t maxProgramBytes = 64 << 10;
  size_t maxParamsBytes = 8 << 20;
  /// Bytes of saves one request may make; a program that saves more fails.
  size_t maxSaveBytes = 1ull << 30;
  /// Saves up to this size go inline in the JSON body; larger ones behind a handle.
  size_t inlineSaveBytes = 8 << 20;
  /// Requests waiting for the engine before new ones get 503.
  int64_t maxQueued = 256;
  int httpThreads = 64;
};

/// What the server serves: the model (for bundles), its tokenizer and chat template, its
/// context length, and the edit every request gets, if any.
struct ServedModel {
  std::shared_ptr<const CausalLM> model;
  const tokenizer::Tokenizer *tokenizer = nullptr;
  /// Null when the tokenizer has no (supported) chat template.
  const tokenizer::ChatTemplate *chatTemplate = nullptr;
  int64_t maxModelLen = 0;
  int64_t vocab = 0;
  /// A persistent edit (`--edit`): a program bound to every request before its own.
  std::optional<session::BoundTrace> edit;
};

class OpenAIServer {
public:
  OpenAIServer(ServerOptions options, ServedModel served, EngineLoop &loop,
               session::ProgramRegistry &programs, SaveHandleStore &saves, Metrics &metrics);
  ~OpenAIServer();

  /// Binds the address (port 0: any free port); false with `error` when it cannot.
  bool bind(std::string &error);
  /// The port bound.
  int port() const { return boundPort; }
  /// Serves until stop().
  void serve();
  void stop();

  // Used by the request handlers.
  const ServerOptions &options() const { return opts; }
  const ServedModel &served() const { return model; }
  EngineLoop &engine() { return loop; }
  session::ProgramRegistry &programs() { return registry; }
  SaveHandleStore &saveStore() { return saves; }
  Metrics &metricsSink() { return metrics; }

private:
  void addRoutes();

  ServerOptions opts;
  ServedModel model;
  EngineLoop &loop;
  session::ProgramRegistry &registry;
  SaveHandleStore &saves;
  Metrics &metrics;
  std::unique_ptr<httplib::Server> http;
  int boundPort = 0;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_OPENAISERVER_H

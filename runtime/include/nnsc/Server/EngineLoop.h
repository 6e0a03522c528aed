//===- EngineLoop.h - the one thread that runs the model --------*- C++ -*-===//
//
// nns-serve's engine: one thread owns the LLMEngine and runs continuous batching over
// everything that arrives (docs/Design.md: HTTP threads never touch the model). HTTP threads hand
// it requests and aborts through a locked inbox; between steps it admits what arrived,
// aborts what was given up, runs one step, and feeds each request's RequestStream. When there
// is nothing to do it sleeps on a condition variable.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_ENGINELOOP_H
#define NNSC_SERVER_ENGINELOOP_H

#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Server/Metrics.h"
#include "nnsc/Server/RequestStream.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace nnsc::server {

class EngineLoop {
public:
  /// Adds a request's sequences to the engine (on the engine thread) and returns their ids,
  /// one per choice; throws InvalidInput to refuse the request.
  using Admit = std::function<std::vector<int64_t>(LLMEngine &)>;

  /// Starts the engine thread.
  EngineLoop(std::unique_ptr<LLMEngine> engine, Metrics &metrics);
  /// Ends every request still running and joins the thread.
  ~EngineLoop();
  EngineLoop(const EngineLoop &) = delete;
  EngineLoop &operator=(const EngineLoop &) = delete;

  /// Queues a request; `stream` hears whether it was admitted and then everything it makes.
  void submit(std::shared_ptr<RequestStream> stream, Admit admit);
  /// Ends `stream`'s request between steps and frees its KV blocks (a client went away).
  void abort(std::shared_ptr<RequestStream> stream);
  /// Requests submitted and not yet running: the inbox plus the engine's waiting queue.
  int64_t numQueued() const;

private:
  void run();
  /// Admits the inbox and applies the aborts (engine thread).
  void drainInbox(std::deque<std::pair<std::shared_ptr<RequestStream>, Admit>> &arrived,
                  std::vector<std::shared_ptr<RequestStream>> &aborted);
  void step();
  void abortStream(const std::shared_ptr<RequestStream> &stream);
  /// Hands finished results to their streams and forgets them.
  void deliverFinished();
  void publishGauges();

  std::unique_ptr<LLMEngine> engine;
  Metrics &metrics;
  /// Engine sequence id -> its request's stream (engine thread only).
  std::map<int64_t, std::shared_ptr<RequestStream>> streams;

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::pair<std::shared_ptr<RequestStream>, Admit>> inbox;
  std::vector<std::shared_ptr<RequestStream>> aborts;
  int64_t waitingInEngine = 0;
  bool stopping = false;
  std::thread thread;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_ENGINELOOP_H

//===- EngineLoop.h - the one thread that runs the model --------*- C++ -*-===//
//
// nns-serve's engine: one thread owns the LLMEngine and runs continuous batching over
// everything that arrives (docs/Design.md: HTTP threads never touch the model). HTTP threads hand
// it requests and aborts through a locked inbox; between steps it admits what arrived,
// aborts what was given up, runs one step, and feeds each request's RequestStream. When there
// is nothing to do it sleeps on a condition variable. On rank 0 of a tensor-parallel server it
// also sends the other ranks what it did to its engine before each step (RankLink.h); when a
// rank is gone, every request in flight ends with an error naming it and the loop refuses new
// ones (failure()).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_ENGINELOOP_H
#define NNSC_SERVER_ENGINELOOP_H

#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Server/Metrics.h"
#include "nnsc/Server/RankLink.h"
#include "nnsc/Server/RequestStream.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace nnsc::server {

class EngineLoop {
public:
  /// Adds a request's sequences to the engine (on the engine thread) and returns their ids,
  /// one per choice; throws InvalidInput to refuse the request.
  using Admit = std::function<std::vector<int64_t>(LLMEngine &)>;

  /// Starts the engine thread; `ranks`: the other ranks of a tensor-parallel server (null on
  /// one rank).
  EngineLoop(std::unique_ptr<LLMEngine> engine, Metrics &metrics,
             std::shared_ptr<RankLink> ranks = nullptr);
  /// Ends every request still running and joins the thread.
  ~EngineLoop();
  EngineLoop(const EngineLoop &) = delete;
  EngineLoop &operator=(const EngineLoop &) = delete;

  /// Queues a request; `stream` hears whether it was admitted and then everything it makes.
  /// `request` is what `admit` submits, for the other ranks (unused on one rank).
  void submit(std::shared_ptr<RequestStream> stream, Admit admit, ForwardedRequest request = {});
  /// Ends `stream`'s request between steps and frees its KV blocks (a client went away).
  void abort(std::shared_ptr<RequestStream> stream);
  /// Requests submitted and not yet running: the inbox plus the engine's waiting queue.
  int64_t numQueued() const;
  /// Why the loop runs no more requests (a tensor-parallel rank is gone); empty while it does.
  std::string failure() const;
  /// What the loop sent the other ranks so far (nothing on one rank).
  std::optional<RankLinkStats> rankStats() const;

private:
  struct Arrival {
    std::shared_ptr<RequestStream> stream;
    Admit admit;
    ForwardedRequest request;
  };

  void run();
  /// Admits the inbox and applies the aborts (engine thread).
  void drainInbox(std::deque<Arrival> &arrived,
                  std::vector<std::shared_ptr<RequestStream>> &aborted);
  void step();
  void abortStream(const std::shared_ptr<RequestStream> &stream);
  /// Aborts sequence `id` here and, through the next message, on the other ranks.
  void abortSequence(int64_t id);
  /// Sends the other ranks what was done since the last message, and whether a step follows;
  /// false (the loop failed) when a rank is gone. True on one rank.
  bool tellRanks(bool step, bool stop = false);
  /// Ends every request in flight with `why` and refuses new ones from now on.
  void failRanks(const std::string &why);
  /// Hands finished results to their streams and forgets them.
  void deliverFinished();
  void publishGauges();

  std::unique_ptr<LLMEngine> engine;
  Metrics &metrics;
  std::shared_ptr<RankLink> ranks;
  /// What was done to the engine since the last message to the other ranks (engine thread).
  std::vector<EngineOp> done;
  /// Engine sequence id -> its request's stream (engine thread only).
  std::map<int64_t, std::shared_ptr<RequestStream>> streams;

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Arrival> inbox;
  std::vector<std::shared_ptr<RequestStream>> aborts;
  int64_t waitingInEngine = 0;
  bool stopping = false;
  std::string failed;
  RankLinkStats sentToRanks;
  std::thread thread;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_ENGINELOOP_H

//===- EngineLoop.cpp - the one thread that runs the model ----------------===//

#include "nnsc/Server/EngineLoop.h"

#include "nnsc/Session/RankLaunch.h"

#include <chrono>
#include <iostream>
#include <set>

namespace nnsc::server {

EngineLoop::EngineLoop(std::unique_ptr<LLMEngine> engineIn, Metrics &metricsIn,
                       std::shared_ptr<RankLink> ranksIn)
    : engine(std::move(engineIn)), metrics(metricsIn), ranks(std::move(ranksIn)) {
  publishGauges();
  thread = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  thread.join();
}

void EngineLoop::submit(std::shared_ptr<RequestStream> stream, Admit admit,
                        ForwardedRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    inbox.push_back({std::move(stream), std::move(admit), std::move(request)});
  }
  wake.notify_all();
}

void EngineLoop::abort(std::shared_ptr<RequestStream> stream) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    aborts.push_back(std::move(stream));
  }
  wake.notify_all();
}

int64_t EngineLoop::numQueued() const {
  std::lock_guard<std::mutex> lock(mutex);
  return int64_t(inbox.size()) + waitingInEngine;
}

std::string EngineLoop::failure() const {
  std::lock_guard<std::mutex> lock(mutex);
  return failed;
}

std::optional<RankLinkStats> EngineLoop::rankStats() const {
  if (!ranks)
    return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex);
  return sentToRanks;
}

void EngineLoop::run() {
  while (true) {
    std::deque<Arrival> arrived;
    std::vector<std::shared_ptr<RequestStream>> aborted;
    {
      std::unique_lock<std::mutex> lock(mutex);
      auto ready = [this] {
        return stopping || !inbox.empty() || !aborts.empty() || !engine->isFinished();
      };
      // The other ranks wait in a collective for the next message: an idle rank 0 still
      // sends one within the collectives' timeout.
      if (ranks && failed.empty()) {
        if (!wake.wait_for(lock, ranks->heartbeat(), ready)) {
          lock.unlock();
          tellRanks(/*step=*/false);
          continue;
        }
      } else {
        wake.wait(lock, ready);
      }
      if (stopping)
        break;
      arrived.swap(inbox);
      aborted.swap(aborts);
    }
    drainInbox(arrived, aborted);
    const bool work = !engine->isFinished();
    if (tellRanks(work) && work)
      step();
    publishGauges();
  }
  for (auto &[id, stream] : streams) {
    engine->abortRequest(id);
    stream->failEngine("the server is shutting down");
  }
  streams.clear();
  done.clear();
  tellRanks(/*step=*/false, /*stop=*/true);
}

void EngineLoop::drainInbox(std::deque<Arrival> &arrived,
                            std::vector<std::shared_ptr<RequestStream>> &aborted) {
  const std::string why = failure();
  for (Arrival &a : arrived) {
    if (!why.empty()) {
      a.stream->reject(why);
      continue;
    }
    // The other ranks admit it too, and fail or succeed alike: same request, same engine.
    if (ranks)
      done.push_back({EngineOp::Kind::Admit, a.request, -1});
    try {
      std::vector<int64_t> ids = a.admit(*engine);
      for (int64_t id : ids)
        streams[id] = a.stream;
      a.stream->start(std::move(ids));
    } catch (const std::exception &e) {
      a.stream->reject(e.what());
    }
  }
  for (const std::shared_ptr<RequestStream> &stream : aborted)
    abortStream(stream);
  deliverFinished();
}

void EngineLoop::abortStream(const std::shared_ptr<RequestStream> &stream) {
  for (int64_t id : stream->ids())
    if (id >= 0)
      abortSequence(id);
}

void EngineLoop::abortSequence(int64_t id) {
  engine->abortRequest(id);
  if (ranks)
    done.push_back({EngineOp::Kind::Abort, {}, id});
}

bool EngineLoop::tellRanks(bool step, bool stop) {
  if (!ranks)
    return true;
  if (!failure().empty())
    return false;
  RankMessage message{std::move(done), step, stop};
  done.clear();
  try {
    ranks->send(message);
  } catch (const DistributedError &e) {
    failRanks(e.what());
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex);
  sentToRanks = ranks->stats();
  return true;
}

void EngineLoop::failRanks(const std::string &why) {
  const std::string gone = session::exitedSpawnedRanks();
  const std::string message = "a tensor-parallel rank is gone (" + (gone.empty() ? why : gone) +
                              "); this server runs no more requests: restart it";
  std::cerr << "nns-serve: " << message << "\n";
  {
    std::lock_guard<std::mutex> lock(mutex);
    failed = message;
  }
  for (auto &[id, stream] : streams) {
    engine->abortRequest(id);
    stream->failEngine(message);
  }
  streams.clear();
  done.clear();
  engine->takeFinished();
}

void EngineLoop::step() {
  auto start = std::chrono::steady_clock::now();
  std::vector<StepOutput> outputs;
  try {
    outputs = engine->step();
  } catch (const DistributedError &e) {
    failRanks(e.what());
    return;
  } catch (const std::exception &e) {
    // Kernel failures are per request (BundleRequest::fail); an exception here is the
    // engine's own. Every request in flight ends with it; the server goes on.
    std::cerr << "nns-serve: engine step failed: " << e.what() << "\n";
    for (auto &[id, stream] : streams) {
      abortSequence(id);
      stream->failEngine(std::string("engine step failed: ") + e.what());
    }
    streams.clear();
    engine->takeFinished();
    return;
  }
  metrics.observeStep(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::set<RequestStream *> ran;
  std::vector<std::shared_ptr<RequestStream>> stopped;
  for (const StepOutput &out : outputs) {
    auto it = streams.find(out.request);
    if (it == streams.end())
      continue;
    ran.insert(it->second.get());
    if (it->second->token(out.request, out.token, out.logprobs))
      stopped.push_back(it->second);
  }
  for (RequestStream *stream : ran)
    stream->stepDone();
  deliverFinished();
  for (const std::shared_ptr<RequestStream> &stream : stopped)
    abortStream(stream);
  deliverFinished();
}

void EngineLoop::deliverFinished() {
  for (const RequestResult &result : engine->takeFinished()) {
    auto it = streams.find(result.request);
    if (it == streams.end())
      continue;
    it->second->finished(result);
    streams.erase(it);
  }
}

void EngineLoop::publishGauges() {
  const Scheduler &scheduler = engine->getScheduler();
  const BlockManager &blocks = scheduler.blockManager();
  EngineGauges gauges{scheduler.numRunning(), scheduler.numWaiting(),
                      blocks.numBlocks() - blocks.numFreeBlocks(), blocks.numFreeBlocks()};
  metrics.publish(gauges);
  std::lock_guard<std::mutex> lock(mutex);
  waitingInEngine = gauges.waiting;
}

} // namespace nnsc::server

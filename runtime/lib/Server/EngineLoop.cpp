//===- EngineLoop.cpp - the one thread that runs the model ----------------===//

#include "nnsc/Server/EngineLoop.h"

#include <chrono>
#include <iostream>
#include <set>

namespace nnsc::server {

EngineLoop::EngineLoop(std::unique_ptr<LLMEngine> engineIn, Metrics &metricsIn)
    : engine(std::move(engineIn)), metrics(metricsIn) {
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

void EngineLoop::submit(std::shared_ptr<RequestStream> stream, Admit admit) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    inbox.emplace_back(std::move(stream), std::move(admit));
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

void EngineLoop::run() {
  while (true) {
    std::deque<std::pair<std::shared_ptr<RequestStream>, Admit>> arrived;
    std::vector<std::shared_ptr<RequestStream>> aborted;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [this] {
        return stopping || !inbox.empty() || !aborts.empty() || !engine->isFinished();
      });
      if (stopping)
        break;
      arrived.swap(inbox);
      aborted.swap(aborts);
    }
    drainInbox(arrived, aborted);
    if (!engine->isFinished())
      step();
    publishGauges();
  }
  for (auto &[id, stream] : streams) {
    engine->abortRequest(id);
    stream->failEngine("the server is shutting down");
  }
  streams.clear();
}

void EngineLoop::drainInbox(std::deque<std::pair<std::shared_ptr<RequestStream>, Admit>> &arrived,
                            std::vector<std::shared_ptr<RequestStream>> &aborted) {
  for (auto &[stream, admit] : arrived) {
    try {
      std::vector<int64_t> ids = admit(*engine);
      for (int64_t id : ids)
        streams[id] = stream;
      stream->start(std::move(ids));
    } catch (const std::exception &e) {
      stream->reject(e.what());
    }
  }
  for (const std::shared_ptr<RequestStream> &stream : aborted)
    abortStream(stream);
  deliverFinished();
}

void EngineLoop::abortStream(const std::shared_ptr<RequestStream> &stream) {
  for (int64_t id : stream->ids())
    if (id >= 0)
      engine->abortRequest(id);
}

void EngineLoop::step() {
  auto start = std::chrono::steady_clock::now();
  std::vector<StepOutput> outputs;
  try {
    outputs = engine->step();
  } catch (const std::exception &e) {
    // Kernel failures are per request (BundleRequest::fail); an exception here is the
    // engine's own. Every request in flight ends with it; the server goes on.
    std::cerr << "nns-serve: engine step failed: " << e.what() << "\n";
    for (auto &[id, stream] : streams) {
      engine->abortRequest(id);
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

//===- Metrics.h - the server's counters in Prometheus format ---*- C++ -*-===//
//
// What `GET /metrics` reports (docs/Server.md lists every series): requests by outcome, prompt
// and generated tokens, the engine's running/waiting requests and KV blocks, a histogram of
// engine step latency, and program compile-cache hits and misses. Counters are bumped from
// the HTTP threads and the engine thread; the engine's gauges are a snapshot it publishes
// after every step.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_METRICS_H
#define NNSC_SERVER_METRICS_H

#include "nnsc/Server/RankLink.h"
#include "nnsc/Session/ProgramRegistry.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace nnsc::server {

/// The engine's state after its latest step.
struct EngineGauges {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kvBlocksUsed = 0;
  int64_t kvBlocksFree = 0;
};

class Metrics {
public:
  /// Counts one finished HTTP request under `outcome` ("success", "aborted", "error_4xx",
  /// "error_5xx", "rejected_busy").
  void countRequest(const std::string &outcome);
  void addTokens(int64_t prompt, int64_t generated);
  /// One engine step of `seconds`.
  void observeStep(double seconds);
  void publish(const EngineGauges &gauges);
  EngineGauges gauges() const;

  /// The Prometheus text exposition of every series, with the program registry's
  /// compile-cache lookups and, on rank 0 of a tensor-parallel server, what it sent the other
  /// ranks (`ranks`, null otherwise).
  std::string render(const session::ProgramRegistry::CacheCounts &compiles,
                     const RankLinkStats *ranks = nullptr) const;

private:
  /// Upper bounds (seconds) of the step-latency buckets.
  static constexpr std::array<double, 12> kStepBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                          0.1,   0.25,   0.5,   1.0,  2.5,   5.0};
  mutable std::mutex mutex;
  std::map<std::string, int64_t> requests;
  int64_t promptTokens = 0;
  int64_t generatedTokens = 0;
  std::array<int64_t, kStepBuckets.size()> stepBuckets{};
  int64_t stepCount = 0;
  double stepSum = 0;
  EngineGauges engine;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_METRICS_H

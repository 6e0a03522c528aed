//===- Metrics.cpp - the server's counters in Prometheus format -----------===//

#include "nnsc/Server/Metrics.h"

#include <sstream>

namespace nnsc::server {

void Metrics::countRequest(const std::string &outcome) {
  std::lock_guard<std::mutex> lock(mutex);
  ++requests[outcome];
}

void Metrics::addTokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mutex);
  promptTokens += prompt;
  generatedTokens += generated;
}

void Metrics::observeStep(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t i = 0; i < kStepBuckets.size(); ++i)
    if (seconds <= kStepBuckets[i])
      ++stepBuckets[i];
  ++stepCount;
  stepSum += seconds;
}

void Metrics::publish(const EngineGauges &gauges) {
  std::lock_guard<std::mutex> lock(mutex);
  engine = gauges;
}

EngineGauges Metrics::gauges() const {
  std::lock_guard<std::mutex> lock(mutex);
  return engine;
}

std::string Metrics::render(const session::ProgramRegistry::CacheCounts &compiles,
                            const RankLinkStats *ranks) const {
  std::lock_guard<std::mutex> lock(mutex);
  std::ostringstream os;
  auto family = [&os](const char *name, const char *type, const char *help) {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  family("nnsc_requests_total", "counter", "HTTP requests by outcome.");
  for (const char *outcome : {"success", "aborted", "error_4xx", "error_5xx", "rejected_busy"}) {
    auto it = requests.find(outcome);
    os << "nnsc_requests_total{outcome=\"" << outcome << "\"} "
       << (it == requests.end() ? 0 : it->second) << "\n";
  }
  family("nnsc_prompt_tokens_total", "counter", "Prompt tokens of finished requests.");
  os << "nnsc_prompt_tokens_total " << promptTokens << "\n";
  family("nnsc_generation_tokens_total", "counter", "Generated tokens of finished requests.");
  os << "nnsc_generation_tokens_total " << generatedTokens << "\n";
  family("nnsc_num_requests_running", "gauge", "Sequences holding KV blocks.");
  os << "nnsc_num_requests_running " << engine.running << "\n";
  family("nnsc_num_requests_waiting", "gauge", "Sequences queued for admission.");
  os << "nnsc_num_requests_waiting " << engine.waiting << "\n";
  family("nnsc_kv_blocks_used", "gauge", "KV cache blocks held by sequences.");
  os << "nnsc_kv_blocks_used " << engine.kvBlocksUsed << "\n";
  family("nnsc_kv_blocks_free", "gauge", "KV cache blocks free (cached prefixes included).");
  os << "nnsc_kv_blocks_free " << engine.kvBlocksFree << "\n";
  family("nnsc_engine_step_seconds", "histogram", "Latency of one engine step.");
  int64_t cumulative = 0;
  for (size_t i = 0; i < kStepBuckets.size(); ++i) {
    cumulative = stepBuckets[i];
    os << "nnsc_engine_step_seconds_bucket{le=\"" << kStepBuckets[i] << "\"} " << cumulative
       << "\n";
  }
  os << "nnsc_engine_step_seconds_bucket{le=\"+Inf\"} " << stepCount << "\n"
     << "nnsc_engine_step_seconds_sum " << stepSum << "\n"
     << "nnsc_engine_step_seconds_count " << stepCount << "\n";
  family("nnsc_compile_cache_total", "counter", "Program compile-cache lookups by result.");
  os << "nnsc_compile_cache_total{result=\"hit\"} " << compiles.hits << "\n"
     << "nnsc_compile_cache_total{result=\"miss\"} " << compiles.misses << "\n";
  if (ranks) {
    family("nnsc_tensor_parallel_messages_total", "counter",
           "Messages rank 0 sent the other ranks (one per step, and while idle).");
    os << "nnsc_tensor_parallel_messages_total " << ranks->messages << "\n";
    family("nnsc_tensor_parallel_bytes_total", "counter",
           "Bytes of those messages, by what they carried.");
    os << "nnsc_tensor_parallel_bytes_total{part=\"programs\"} " << ranks->programBytes << "\n"
       << "nnsc_tensor_parallel_bytes_total{part=\"requests\"} "
       << ranks->bytes - ranks->programBytes << "\n";
    family("nnsc_tensor_parallel_collective_seconds_total", "counter",
           "Seconds rank 0 spent in collectives (the forward pass's and the messages').");
    os << "nnsc_tensor_parallel_collective_seconds_total " << ranks->collectives.seconds << "\n";
    family("nnsc_tensor_parallel_collectives_total", "counter", "Collectives rank 0 took part in.");
    os << "nnsc_tensor_parallel_collectives_total " << ranks->collectives.collectives << "\n";
  }
  return os.str();
}

} // namespace nnsc::server

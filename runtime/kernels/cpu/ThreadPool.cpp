//===- ThreadPool.cpp - Persistent workers for decode kernels ---*- C++ -*-===//

#include "nnsc/Runtime/Kernels/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <memory>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nnsc::kernels {

namespace {

void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

/// How long an idle worker keeps polling before it sleeps. Batch-1 decode's jobs (the GEMVs
/// and attention of one step) are a few microseconds apart. Longer gaps are a step boundary,
/// or a oneDNN product or ATen parallel_for running on LibTorch's OpenMP threads: a worker
/// still polling then takes a core from them (200 us made the batched decode projections
/// after attention and SiLU * up a third slower; docs/Engine.md, "Threads").
constexpr auto SpinTime = std::chrono::microseconds(30);

} // namespace

std::atomic<int> ThreadPool::polling{0};

ThreadPool::KeepPolling::KeepPolling() { polling.fetch_add(1); }
ThreadPool::KeepPolling::~KeepPolling() { polling.fetch_sub(1); }

ThreadPool::ThreadPool(int threads) {
  for (int part = 1; part < threads; ++part)
    workers.emplace_back([this, part] { workerLoop(part); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    generation.fetch_add(1);
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

void ThreadPool::workerLoop(int part) {
  uint64_t seen = 0;
  for (;;) {
    // Spin, then sleep. A worker registers as a sleeper before its last check of the
    // generation, and run() bumps the generation before reading the sleeper count (both
    // sequentially consistent), so a wake-up is never lost.
    auto start = std::chrono::steady_clock::now();
    uint64_t now = generation.load(std::memory_order_acquire);
    for (int i = 0; now == seen; ++i) {
      cpuRelax();
      now = generation.load(std::memory_order_acquire);
      if (now != seen || (i & 255) != 255)
        continue;
      if (polling.load(std::memory_order_relaxed) > 0) {
        start = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - start < SpinTime)
        continue;
      std::unique_lock<std::mutex> lock(mutex);
      sleepers.fetch_add(1);
      wake.wait(lock, [&] { return generation.load() != seen; });
      sleepers.fetch_sub(1);
      now = generation.load();
    }
    seen = now;
    if (stopping.load())
      return;
    runParts(seen);
  }
}

void ThreadPool::runParts(uint64_t job) {
  const uint64_t parts = uint64_t(threads());
  uint64_t state = claim.load(std::memory_order_acquire);
  for (;;) {
    // A late worker sees a finished or newer job and takes nothing from it.
    if ((state >> 16) != job || (state & 0xffff) >= parts)
      return;
    if (!claim.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel))
      continue;
    jobFn(jobContext, int(state & 0xffff), int(parts));
    finished.fetch_add(1, std::memory_order_acq_rel);
    state = claim.load(std::memory_order_acquire);
  }
}

void ThreadPool::run(PartFn fn, const void *context) {
  if (workers.empty()) {
    fn(context, 0, 1);
    return;
  }
  std::lock_guard<std::mutex> oneJob(jobMutex);
  jobFn = fn;
  jobContext = context;
  finished.store(0, std::memory_order_relaxed);
  const uint64_t job = generation.load() + 1;
  claim.store(job << 16, std::memory_order_release);
  generation.store(job);
  if (sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex);
    wake.notify_all();
  }
  runParts(job);
  // Only parts a worker has claimed and is running are left; yielding lets a descheduled
  // worker get the core back sooner.
  for (int i = 0; finished.load(std::memory_order_acquire) != threads(); ++i) {
    if (i < 4096)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

ThreadPool &ThreadPool::shared(int threads) {
  static std::mutex guard;
  static std::unique_ptr<ThreadPool> pool;
  std::lock_guard<std::mutex> lock(guard);
  threads = std::max(threads, 1);
  if (!pool || pool->threads() != threads) {
    pool.reset();
    pool = std::make_unique<ThreadPool>(threads);
  }
  return *pool;
}

} // namespace nnsc::kernels

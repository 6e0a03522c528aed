//===- ThreadPool.h - Persistent workers for decode kernels -----*- C++ -*-===//
//
// A fixed set of worker threads that run one parallel job at a time, the caller taking part.
// Decode issues a few hundred small jobs per token (every projection of every layer), so a
// worker spins briefly after a job, ready for the next one, and then sleeps on a condition
// variable: it never burns a core between steps or while the machine is shared. Inside a
// KeepPolling scope (a decode step whose products all run here) it polls until the scope ends.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_THREADPOOL_H
#define NNSC_RUNTIME_KERNELS_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace nnsc::kernels {

/// Runs jobs split into one part per thread.
class ThreadPool {
public:
  /// A job part: called once for each part index in [0, parts).
  using PartFn = void (*)(const void *context, int part, int parts);

  /// `threads` >= 1 counts the caller; `threads - 1` workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int threads() const { return int(workers.size()) + 1; }

  /// Workers asleep on the condition variable now (for tests and diagnostics).
  int sleepingWorkers() const { return sleepers.load(); }

  /// Calls fn(context, p, threads()) for every part p, on the calling thread and the workers,
  /// and returns when all parts are done. Jobs from several threads run one at a time.
  void run(PartFn fn, const void *context);

  /// Runs `f(part, parts)` for every part, as run().
  template <typename F> void parallel(const F &f) {
    run([](const void *c, int part, int parts) { (*static_cast<const F *>(c))(part, parts); }, &f);
  }

  /// While alive, idle workers poll for the next job however long they wait instead of going
  /// to sleep: for a run of jobs with serial work between them that may outlast the spin time
  /// (a decode step: attention, hooks, the lm_head's sampling rows). Only where nothing else
  /// (oneDNN, ATen's OpenMP threads) wants the cores meanwhile.
  /// Applies to every pool, so a scope outlives a pool that shared() recreates.
  class KeepPolling {
  public:
    KeepPolling();
    ~KeepPolling();
    KeepPolling(const KeepPolling &) = delete;
    KeepPolling &operator=(const KeepPolling &) = delete;
  };

  /// The process-wide pool with `threads` threads, recreated when the count changes.
  static ThreadPool &shared(int threads);

private:
  void workerLoop(int part);

  /// Claims and runs parts of job `job` until none is left.
  void runParts(uint64_t job);

  std::vector<std::thread> workers;
  std::atomic<uint64_t> generation{0};
  /// (job generation << 16) | next unclaimed part: parts are claimed, not assigned, so when
  /// a worker is descheduled on a busy machine the caller runs its part instead of waiting.
  std::atomic<uint64_t> claim{0};
  std::atomic<int> finished{0};
  std::atomic<int> sleepers{0};
  static std::atomic<int> polling; // live KeepPolling scopes
  std::atomic<bool> stopping{false};
  std::mutex mutex;    // sleeping workers wait on `wake` under it
  std::mutex jobMutex; // one job at a time, whichever thread submits it
  std::condition_variable wake;
  PartFn jobFn = nullptr;
  const void *jobContext = nullptr;
};

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_THREADPOOL_H

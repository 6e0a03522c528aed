//===- ThreadPoolTest.cpp - The decode kernels' thread pool -----*- C++ -*-===//

#include "nnsc/Runtime/Kernels/ThreadPool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

using nnsc::kernels::ThreadPool;

TEST(ThreadPool, EveryPartRunsOncePerJob) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    ASSERT_EQ(pool.threads(), threads);
    std::vector<std::atomic<int>> counts(static_cast<size_t>(threads));
    for (int job = 0; job < 2000; ++job)
      pool.parallel([&](int part, int parts) {
        EXPECT_EQ(parts, threads);
        counts[size_t(part)].fetch_add(1);
      });
    for (int p = 0; p < threads; ++p)
      EXPECT_EQ(counts[size_t(p)].load(), 2000) << "threads=" << threads << " part=" << p;
  }
}

TEST(ThreadPool, WakesWorkersThatWentToSleep) {
  // Idle longer than the spin time between jobs, so workers are asleep when each job comes.
  ThreadPool pool(2);
  std::atomic<int> done{0};
  for (int job = 0; job < 20; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.parallel([&](int, int) { done.fetch_add(1); });
    EXPECT_EQ(done.load(), 2 * (job + 1));
  }
}

/// Waits up to a second for `pool` to have `n` sleeping workers.
bool sleepingWithin(const ThreadPool &pool, int n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (pool.sleepingWorkers() != n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  return pool.sleepingWorkers() == n;
}

TEST(ThreadPool, KeepPollingKeepsIdleWorkersAwakeUntilItEnds) {
  ThreadPool pool(3);
  std::atomic<int> runs{0};
  pool.parallel([&](int, int) { runs.fetch_add(1); });
  EXPECT_TRUE(sleepingWithin(pool, 2)) << "idle workers go to sleep after the spin time";
  {
    ThreadPool::KeepPolling polling;
    pool.parallel([&](int, int) { runs.fetch_add(1); });
    EXPECT_TRUE(sleepingWithin(pool, 0)) << "the job woke them";
    // Far longer than the spin time: the workers still poll.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(pool.sleepingWorkers(), 0);
    pool.parallel([&](int, int) { runs.fetch_add(1); });
  }
  EXPECT_TRUE(sleepingWithin(pool, 2)) << "the workers sleep again once the scope ends";
  EXPECT_EQ(runs.load(), 9);
}

TEST(ThreadPool, ResultsAreVisibleAfterRun) {
  ThreadPool pool(2);
  std::vector<int64_t> data(1 << 16);
  for (int round = 1; round <= 50; ++round) {
    pool.parallel([&](int part, int parts) {
      const size_t n = data.size(), begin = n * size_t(part) / size_t(parts),
                   end = n * size_t(part + 1) / size_t(parts);
      for (size_t i = begin; i < end; ++i)
        data[i] = int64_t(i) * round;
    });
    int64_t sum = 0;
    for (int64_t v : data)
      sum += v;
    const int64_t n = int64_t(data.size());
    ASSERT_EQ(sum, n * (n - 1) / 2 * round);
  }
}

TEST(ThreadPool, SharedPoolFollowsTheThreadCount) {
  EXPECT_EQ(ThreadPool::shared(2).threads(), 2);
  EXPECT_EQ(ThreadPool::shared(1).threads(), 1);
  EXPECT_EQ(ThreadPool::shared(0).threads(), 1);
}

} // namespace

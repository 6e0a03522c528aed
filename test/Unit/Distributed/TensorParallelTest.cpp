//===- TensorParallelTest.cpp - c10d Gloo ranks as forked processes -------===//
//
// Each test forks its ranks 1..N-1 (this process is rank 0); they meet on a free loopback
// port through c10d's TCPStore, as nns-run's ranks do. A child reports its failures through
// its exit status.
//
//===----------------------------------------------------------------------===//

#include "Backend/TinyModel.h"

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <spawn.h>

extern char **environ;

using namespace nnsc;

namespace {

/// A loopback port nothing listens on now.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa));
  getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len);
  close(fd);
  return ntohs(sa.sin_port);
}

DistributedOptions optionsFor(int rank, int size, int port, int timeoutSeconds = 20) {
  DistributedOptions o;
  o.rank = rank;
  o.worldSize = size;
  o.masterPort = port;
  o.timeout = std::chrono::seconds(timeoutSeconds);
  return o;
}

/// Runs `body(rank, port)` for rank 0 here and for ranks 1..size-1 in fresh copies of this
/// test binary running only this test (a forked child would inherit OpenMP's thread pool
/// without its threads). Expects every child to exit 0: a failed expectation or an exception
/// in a child is its exit status.
void onRanks(int size, const std::function<void(int, int)> &body) {
  if (const char *rank = std::getenv("NNSC_TEST_RANK")) {
    int code = 0;
    try {
      body(std::atoi(rank), std::atoi(std::getenv("NNSC_TEST_PORT")));
    } catch (const std::exception &e) {
      std::fprintf(stderr, "rank %s: %s\n", rank, e.what());
      code = 1;
    }
    std::fflush(nullptr);
    _exit(code || ::testing::Test::HasFailure() ? 1 : 0);
  }
  const int port = freePort();
  const ::testing::TestInfo *test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter =
      std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name();
  std::vector<pid_t> children;
  for (int r = 1; r < size; ++r) {
    std::vector<std::string> env;
    for (char **e = environ; *e; ++e)
      env.emplace_back(*e);
    env.push_back("NNSC_TEST_RANK=" + std::to_string(r));
    env.push_back("NNSC_TEST_PORT=" + std::to_string(port));
    std::vector<char *> envp;
    for (std::string &e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string self = "/proc/self/exe";
    char *argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
    children.push_back(pid);
  }
  body(0, port);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child rank failed";
  }
}

/// The tiny model (Backend/TinyModel.h) on the CPU: whole, or `group`'s rank's shard.
std::shared_ptr<DeviceBackend> tinyModel(std::shared_ptr<TensorParallelGroup> group = nullptr) {
  ShardRank rank = group ? ShardRank{group->rank(), group->size()} : ShardRank{};
  return makeCpuBackend(std::make_shared<CausalLM>(test::tinyWeights(torch::kFloat32, rank),
                                                   CpuKernels::get(), std::move(group)));
}

/// Greedy completions of two prompts through the engine.
std::vector<std::vector<int32_t>> complete(std::shared_ptr<DeviceBackend> backend,
                                           std::vector<int32_t> second = {7, 8, 9}) {
  SchedulerConfig config;
  config.numBlocks = 16;
  config.blockSize = 16;
  config.maxModelLen = 256;
  LLMEngine engine(backend, config);
  SamplingParams params;
  params.maxTokens = 8;
  params.ignoreEos = true;
  engine.addRequest({1, 2, 3, 4, 5}, params);
  engine.addRequest(second, params);
  std::vector<std::vector<int32_t>> out;
  for (const RequestResult &r : engine.runToCompletion())
    out.push_back(r.completionTokens);
  return out;
}

} // namespace

TEST(TensorParallel, CollectivesCombineEveryRank) {
  onRanks(3, [&](int rank, int port) {
    auto group = TensorParallelGroup::connect(optionsFor(rank, 3, port));
    torch::Tensor sum = torch::full({4}, float(rank + 1));
    group->allReduce(sum);
    EXPECT_TRUE(torch::equal(sum, torch::full({4}, 6.0f)));
    std::vector<torch::Tensor> all = group->allGather(torch::full({2}, float(rank)));
    ASSERT_EQ(all.size(), 3u);
    for (int r = 0; r < 3; ++r)
      EXPECT_TRUE(torch::equal(all[size_t(r)], torch::full({2}, float(r))));
    std::vector<torch::Tensor> gathered = group->gather(torch::full({1}, float(10 * rank)));
    EXPECT_EQ(gathered.size(), rank == 0 ? 3u : 0u);
    if (rank == 0)
      EXPECT_EQ(gathered[2].item<float>(), 20.0f);
    torch::Tensor value = torch::full({3}, float(rank), torch::kInt32);
    group->broadcast(value);
    EXPECT_TRUE(torch::equal(value, torch::zeros({3}, torch::kInt32)));
    EXPECT_EQ(group->stats().collectives, 4);
  });
}

TEST(TensorParallel, ARankThatExitsStopsTheOthersWithAnError) {
  onRanks(2, [&](int rank, int port) {
    auto group = TensorParallelGroup::connect(optionsFor(rank, 2, port, 5));
    // Rank 1 leaves only once rank 0 has sent it something: a connect returns on one rank
    // before the other has finished its handshake, and leaving then fails rank 0's connect
    // instead of the collective under test.
    torch::Tensor fromRoot = torch::zeros({1});
    group->broadcast(fromRoot);
    if (rank == 1)
      _exit(0); // dies before the collective
    auto start = std::chrono::steady_clock::now();
    torch::Tensor value = torch::ones({4});
    try {
      group->allReduce(value);
      ADD_FAILURE() << "all_reduce with a dead rank returned";
    } catch (const DistributedError &e) {
      EXPECT_NE(std::string(e.what()).find("tensor parallel rank 0: all_reduce failed"),
                std::string::npos)
          << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  });
}

TEST(TensorParallel, APortInUseIsAnError) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len);
  const int port = ntohs(sa.sin_port);
  try {
    TensorParallelGroup::connect(optionsFor(0, 2, port, 2));
    ADD_FAILURE() << "rank 0 served the store on a port in use";
  } catch (const DistributedError &e) {
    EXPECT_NE(std::string(e.what()).find("cannot serve the rendezvous store on 127.0.0.1:" +
                                         std::to_string(port) + " (is the port in use?"),
              std::string::npos)
        << e.what();
  }
  close(fd);
}

/// The sharded tiny model against the whole one: the first step's logits (whole on rank 0)
/// and the greedy tokens of two requests through the engine.
void expectShardedMatchesWhole(int size) {
  onRanks(size, [&](int rank, int port) {
    auto group = TensorParallelGroup::connect(optionsFor(rank, size, port));
    std::shared_ptr<DeviceBackend> backend = tinyModel(group);
    backend->allocateKVCache(4, 16);
    Sequence seq(0, {1, 2, 3, 4, 5}, SamplingParams{});
    seq.numScheduledTokens = 5;
    seq.blockTable = {0};
    ScheduledBatch batch;
    batch.isPrefill = true;
    batch.seqs.push_back(&seq);
    const AttentionMetadata meta = AttentionMetadata::fromBatch(batch, 16);
    torch::Tensor tokens = torch::tensor({1, 2, 3, 4, 5}, torch::kInt64);
    torch::Tensor logits = backend->prefillForward(tokens, meta, nullptr);
    std::vector<std::vector<int32_t>> generated = complete(backend);
    if (rank != 0) {
      EXPECT_EQ(logits.size(1), 0); // only rank 0 samples
      return;
    }
    std::shared_ptr<DeviceBackend> whole = tinyModel();
    whole->allocateKVCache(4, 16);
    torch::Tensor expected = whole->prefillForward(tokens, meta, nullptr);
    EXPECT_TRUE(torch::allclose(logits, expected, 1e-5, 1e-5))
        << (logits - expected).abs().max().item<float>();
    EXPECT_EQ(generated, complete(whole));
  });
}

TEST(TensorParallel, TwoRanksGenerateWhatTheWholeModelDoes) { expectShardedMatchesWhole(2); }

// Four ranks on two KV heads: each KV head replicated on two ranks.
TEST(TensorParallel, FourRanksGenerateWhatTheWholeModelDoes) { expectShardedMatchesWhole(4); }

TEST(TensorParallel, RanksGivenDifferentRequestsStopInsteadOfDiverging) {
  onRanks(2, [&](int rank, int port) {
    auto group = TensorParallelGroup::connect(optionsFor(rank, 2, port, 5));
    std::shared_ptr<DeviceBackend> backend = tinyModel(group);
    try {
      complete(backend,
               rank == 0 ? std::vector<int32_t>{7, 8, 9} : std::vector<int32_t>{7, 8, 9, 10});
      ADD_FAILURE() << "rank " << rank << " ran another batch than rank 0";
    } catch (const DistributedError &e) {
      // Rank 1 sees the difference; rank 0 then loses rank 1 in its next collective.
      EXPECT_NE(
          std::string(e.what()).find(rank == 1 ? "scheduled another step than rank 0" : "failed"),
          std::string::npos)
          << e.what();
    }
  });
}

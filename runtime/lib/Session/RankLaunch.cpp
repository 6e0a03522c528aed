//===- RankLaunch.cpp - The ranks of a tensor-parallel front door -*- C++ -*-===//

#include "nnsc/Session/RankLaunch.h"

#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern char **environ;

namespace nnsc::session {

namespace {

/// The ranks spawned here: rank r is spawned[r - 1]; `status` is set once it was reaped.
struct Spawned {
  pid_t pid;
  int rank;
  std::optional<int> status;
};
std::vector<Spawned> spawned;

[[noreturn]] void fail(const std::string &message) { throw InvalidInput(message); }

/// A TCP port nothing listens on now (the kernel's choice).
int freePort(const std::string &addr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  inet_pton(AF_INET, addr == "localhost" ? "127.0.0.1" : addr.c_str(), &sa.sin_addr);
  socklen_t len = sizeof(sa);
  int port = -1;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len) == 0)
    port = ntohs(sa.sin_port);
  if (fd >= 0)
    close(fd);
  if (port < 0)
    fail("--tensor-parallel-size: cannot find a free TCP port on " + addr + " (set MASTER_PORT)");
  return port;
}

/// This process's environment with `set` replacing the variables it names.
std::vector<std::string> environmentWith(const std::vector<std::string> &set) {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    std::string entry(*e);
    bool replaced = false;
    for (const std::string &s : set)
      replaced |= entry.compare(0, s.find('=') + 1, s, 0, s.find('=') + 1) == 0;
    if (!replaced)
      env.push_back(entry);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

} // namespace

std::optional<DistributedOptions> startTensorParallel(int size, char **argv) {
  std::optional<DistributedOptions> launched;
  try {
    launched = DistributedOptions::fromEnvironment();
  } catch (const DistributedError &e) {
    fail(e.what());
  }
  if (launched) {
    if (size != 1 && launched->worldSize != size)
      fail("--tensor-parallel-size " + std::to_string(size) +
           " but WORLD_SIZE=" + std::to_string(launched->worldSize));
    if (launched->worldSize == 1)
      return std::nullopt;
    return launched;
  }
  if (size == 1)
    return std::nullopt;

  DistributedOptions o;
  o.worldSize = size;
  if (const char *addr = std::getenv("MASTER_ADDR"); addr && *addr)
    o.masterAddr = addr;
  const char *port = std::getenv("MASTER_PORT");
  o.masterPort = port && *port ? std::atoi(port) : freePort(o.masterAddr);
  if (o.masterPort < 1 || o.masterPort > 65535)
    fail(std::string("MASTER_PORT='") + port + "' is not a TCP port");
  if (const std::optional<int64_t> t = nnsc::RuntimeOptions::get().distTimeoutSeconds)
    o.timeout = std::chrono::seconds(*t);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  static const bool stopAtExit = std::atexit([] { stopSpawnedRanks(); }) == 0;
  (void)stopAtExit;
  for (int r = 1; r < size; ++r) {
    std::vector<std::string> env =
        environmentWith({"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
                         "WORLD_SIZE=" + std::to_string(size), "MASTER_ADDR=" + o.masterAddr,
                         "MASTER_PORT=" + std::to_string(o.masterPort),
                         "NNSC_DIST_TIMEOUT=" + std::to_string(o.timeout.count() / 1000)});
    std::vector<char *> envp;
    for (std::string &e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid;
    if (int err = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data()))
      fail("--tensor-parallel-size: cannot start rank " + std::to_string(r) + ": " +
           std::strerror(err));
    spawned.push_back({pid, r, std::nullopt});
  }
  posix_spawn_file_actions_destroy(&actions);
  return o;
}

int defaultThreads(const std::optional<DistributedOptions> &ranks) {
  return ranks ? std::max(1, int(std::thread::hardware_concurrency()) / ranks->worldSize) : 2;
}

bool waitForSpawnedRanks() {
  bool ok = true;
  for (Spawned &s : spawned) {
    if (!s.status) {
      int status = 0;
      waitpid(s.pid, &status, 0);
      s.status = status;
    }
    ok &= WIFEXITED(*s.status) && WEXITSTATUS(*s.status) == 0;
  }
  spawned.clear();
  return ok;
}

std::string exitedSpawnedRanks() {
  std::string out;
  for (Spawned &s : spawned) {
    int status = 0;
    if (!s.status && waitpid(s.pid, &status, WNOHANG) == s.pid)
      s.status = status;
    if (!s.status)
      continue;
    out += (out.empty() ? "" : "; ") + std::string("rank ") + std::to_string(s.rank);
    if (WIFSIGNALED(*s.status))
      out += " was killed by signal " + std::to_string(WTERMSIG(*s.status));
    else
      out += " exited with status " + std::to_string(WEXITSTATUS(*s.status));
  }
  return out;
}

void stopSpawnedRanks() {
  for (const Spawned &s : spawned)
    if (!s.status)
      kill(s.pid, SIGTERM);
  for (const Spawned &s : spawned)
    if (!s.status)
      waitpid(s.pid, nullptr, 0);
  spawned.clear();
}

void exitWithError(const char *tool, int rank, const std::string &message) {
  const std::string line = std::string(tool) +
                           ": error: " + (rank >= 0 ? "rank " + std::to_string(rank) + ": " : "") +
                           message + "\n";
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0)
      break;
    done += size_t(n);
  }
  std::exit(1);
}

} // namespace nnsc::session

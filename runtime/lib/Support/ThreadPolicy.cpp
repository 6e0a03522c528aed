//===- ThreadPolicy.cpp - how the tools' OpenMP threads wait ----*- C++ -*-===//

#include "nnsc/Support/ThreadPolicy.h"

#include <cstdlib>
#include <unistd.h>

void nnsc::chooseThreadWaitPolicy(char **argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
    return;
  // Passive: a waiting thread sleeps at once. Decode's projections run on nnsc's own pool
  // (which spins briefly, then sleeps), so OpenMP only serves prefill GEMMs and small ops,
  // where wake-up latency is small next to the work (docs/Performance.md, "Threads").
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", argv);
}

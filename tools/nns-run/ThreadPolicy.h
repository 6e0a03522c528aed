//===- ThreadPolicy.h - how nns-run's threads wait --------------*- C++ -*-===//
//
// LibTorch's OpenMP threads spin while they wait for work by default. On a machine whose cores
// are shared (other processes, or a server's own side work) the spinning steals the cores the
// other thread needs and batch-1 decode runs several times slower. libgomp reads its wait policy
// once, when it is loaded, before main() runs; so nns-run sets the policy and re-executes itself.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_THREADPOLICY_H
#define NNSC_TOOLS_NNSRUN_THREADPOLICY_H

namespace nnsrun {

/// Unless the user chose an OpenMP wait policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT), sets a
/// passive one and re-executes this program with the same arguments. Returns only when no
/// re-execution was needed or it failed (then the default policy stays).
void chooseThreadWaitPolicy(char **argv);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_THREADPOLICY_H

//===- ThreadPolicy.h - how the tools' OpenMP threads wait ------*- C++ -*-===//
//
// LibTorch's OpenMP threads spin while they wait for work by default. On a machine whose cores
// are shared (other processes, or a server's own side work) the spinning steals the cores the
// other thread needs and batch-1 decode runs several times slower. libgomp reads its wait policy
// once, when it is loaded, before main() runs; so nns-run and nns-serve set the policy and
// re-execute themselves.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SUPPORT_THREADPOLICY_H
#define NNSC_SUPPORT_THREADPOLICY_H

namespace nnsc {

/// Unless the user chose an OpenMP wait policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT), sets a
/// passive one and re-executes this program with the same arguments. Returns only when no
/// re-execution was needed or it failed (then the default policy stays).
void chooseThreadWaitPolicy(char **argv);

} // namespace nnsc

#endif // NNSC_SUPPORT_THREADPOLICY_H

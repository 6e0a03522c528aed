//===- CPUTarget.h - LLVM IR to an optimized host object --------*- C++ -*-===//
//
// Host code generation for bundles, in process: a TargetMachine for the host CPU (or --cpu),
// LLVM's new-pass-manager O2/O3 pipeline, and object emission.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CPU_CPUTARGET_H
#define NNSC_TARGET_CPU_CPUTARGET_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace nnsc::cpu {

struct CPUOptions {
  /// CPU name as llc's -mcpu ("skylake-avx512"); empty or "native" for the host.
  std::string cpu;
  /// 2 or 3.
  unsigned optLevel = 3;
};

/// A position-independent TargetMachine for the host triple. Returns null and sets `error`
/// for an unknown CPU.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CPUOptions &options,
                                                         std::string &error);

/// Sets the module's triple and data layout for `machine` and runs the new-PM default
/// pipeline at `optLevel`.
void optimize(llvm::Module &module, llvm::TargetMachine &machine, unsigned optLevel);

/// Emits `module` as an ELF relocatable object into `object`.
bool emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                llvm::SmallVectorImpl<char> &object, std::string &error);

} // namespace nnsc::cpu

#endif // NNSC_TARGET_CPU_CPUTARGET_H

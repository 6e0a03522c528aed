//===- SharedObjectLinker.h - link a bundle with lld ------------*- C++ -*-===//
//
// Links a relocatable object into a shared object with lld's ELF driver, in process
// (liblld-22-dev), so that `nnsc` needs no linker on PATH.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_CPU_SHAREDOBJECTLINKER_H
#define NNSC_TARGET_CPU_SHAREDOBJECTLINKER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace nnsc::cpu {

/// Writes `object` to a temporary file and links it into the shared object `outputPath`,
/// exporting only default-visibility symbols. On failure sets `error` to lld's diagnostics.
bool linkSharedObject(llvm::ArrayRef<char> object, llvm::StringRef outputPath, std::string &error);

} // namespace nnsc::cpu

#endif // NNSC_TARGET_CPU_SHAREDOBJECTLINKER_H

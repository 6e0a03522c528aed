//===- CompileSource.h - a trace program to a bundle, in-process -*- C++ -*-===//
//
// The whole compiler as one call, for programs that embed it (nns-serve compiles the programs
// its requests carry, the Python package compiles for its LLM): `.nns` source text to a
// bundle file for one model. The header is plain C++ on purpose: a caller built with LibTorch's
// flags includes it without ever seeing an MLIR or LLVM header (docs/Design.md: the two meet only
// at the bundle ABI).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_DRIVER_COMPILESOURCE_H
#define NNSC_DRIVER_COMPILESOURCE_H

#include "nnsc/Schema/Architecture.h"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace nnsc::driver {

/// What compileSource produces and the limits it enforces on untrusted source.
struct SourceCompileOptions {
  /// Host CPU to generate code for ("native": this machine's).
  std::string cpu = "native";
  /// LLVM optimization level, 2 or 3.
  unsigned optLevel = 3;
  /// Largest accepted source, in bytes; 0 for no limit.
  size_t maxSourceBytes = 0;
  /// Also the kernels' device copies (nnsc --target=cuda).
  bool cuda = false;
};

/// Outcome of compileSource: success, or the diagnostics as nnsc prints them
/// ("NAME:LINE:COL: error: MESSAGE", the source line and a caret, then any notes).
struct SourceCompileResult {
  bool ok = false;
  std::string diagnostics;
};

/// Parses, checks, schedules and lowers `source` (named `bufferName` in diagnostics) for
/// `arch` and writes the bundle to `outputPath`. Safe to call from several threads: calls are
/// serialized (LLVM's target setup and lld's linker state are process-global).
SourceCompileResult compileSource(std::string_view source, const std::string &bufferName,
                                  const schema::Architecture &arch,
                                  const SourceCompileOptions &options,
                                  const std::string &outputPath);

/// compileSource for `arch` as the function a program registry takes
/// (nnsc/Session/ProgramRegistry.h): (source, bufferName, outputPath, diagnostics) -> compiled.
std::function<bool(const std::string &, const std::string &, const std::string &, std::string &)>
programCompiler(const schema::Architecture &arch, SourceCompileOptions options);

} // namespace nnsc::driver

#endif // NNSC_DRIVER_COMPILESOURCE_H

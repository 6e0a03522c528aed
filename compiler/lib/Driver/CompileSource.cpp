//===- CompileSource.cpp - a trace program to a bundle, in-process --------===//

#include "nnsc/Driver/CompileSource.h"

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Driver/Pipeline.h"
#include "nnsc/Frontend/Parser.h"
#include "nnsc/Target/Bundle/BundleEmitter.h"
#include "nnsc/Target/Bundle/KernelIR.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

namespace nnsc::driver {

SourceCompileResult compileSource(std::string_view source, const std::string &bufferName,
                                  const schema::Architecture &arch,
                                  const SourceCompileOptions &options,
                                  const std::string &outputPath) {
  SourceCompileResult result;
  if (options.maxSourceBytes && source.size() > options.maxSourceBytes) {
    result.diagnostics = bufferName + ": error: program is " + std::to_string(source.size()) +
                         " bytes, more than the limit of " +
                         std::to_string(options.maxSourceBytes) + "\n";
    return result;
  }
  if (options.optLevel != 2 && options.optLevel != 3) {
    result.diagnostics =
        "error: optimization level must be 2 or 3, got " + std::to_string(options.optLevel) + "\n";
    return result;
  }
  static std::mutex serialized;
  std::lock_guard<std::mutex> lock(serialized);

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(
                                   llvm::StringRef(source.data(), source.size()), bufferName),
                               llvm::SMLoc());
  mlir::DialectRegistry registry;
  bundle::registerKernelIRDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.getOrLoadDialect<nns::NNSDialect>();
  llvm::raw_string_ostream diagnostics(result.diagnostics);
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnostics);

  std::optional<ast::Program> program = parseProgram(sourceMgr, context);
  if (!program)
    return result;
  mlir::OwningOpRef<mlir::ModuleOp> module = generateCheckedIR(*program, arch, context);
  if (!module)
    return result;
  llvm::StringRef text = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
  if (mlir::failed(scheduleModule(*module, arch, text, /*lowerToKernels=*/true)))
    return result;
  bundle::BundleOptions backend;
  backend.cpu.cpu = options.cpu;
  backend.cpu.optLevel = options.optLevel;
  if (options.cuda)
    backend.target = bundle::TargetKind::CUDA;
  result.ok = mlir::succeeded(bundle::writeBundle(*module, backend, outputPath));
  return result;
}

std::function<bool(const std::string &, const std::string &, const std::string &, std::string &)>
programCompiler(const schema::Architecture &arch, SourceCompileOptions options) {
  return [&arch, options](const std::string &source, const std::string &bufferName,
                          const std::string &outputPath, std::string &diagnostics) {
    SourceCompileResult r = compileSource(source, bufferName, arch, options, outputPath);
    diagnostics = std::move(r.diagnostics);
    return r.ok;
  };
}

} // namespace nnsc::driver

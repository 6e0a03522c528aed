//===- KernelIRDriver.cpp - the back end's driver on kernel-level IR ------===//

#include "nnsc/Target/Bundle/KernelIRDriver.h"

#include "nnsc/Pipelines/Pipelines.h"
#include "nnsc/Target/Bundle/KernelIR.h"
#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

namespace nnsc::bundle {

namespace {

/// The back end's command-line options; constructed (and so registered) on first use.
struct BackendCLOptions {
  cl::OptionCategory category{"Back end options (kernel-level .mlir input)"};

  cl::opt<std::string> outputFilename{"o", cl::desc("Output file ('-' for stdout)"),
                                      cl::value_desc("filename"), cl::init("-"), cl::cat(category)};

  cl::opt<TargetKind> target{
      "target", cl::desc("Where the kernels run"), cl::init(TargetKind::CPU),
      cl::values(
          clEnumValN(TargetKind::CPU, "cpu", "host CPU (default)"),
          clEnumValN(TargetKind::CUDA, "cuda", "host CPU plus the kernels as PTX for NVIDIA GPUs")),
      cl::cat(category)};

  cl::opt<std::string> cpuName{"cpu",
                               cl::desc("Host CPU to generate code for (default: this "
                                        "machine's, as 'native')"),
                               cl::value_desc("name"), cl::init("native"), cl::cat(category)};

  cl::opt<unsigned> optLevel{"opt-level", cl::desc("LLVM optimization level, 2 or 3"), cl::init(3),
                             cl::cat(category)};

  cl::opt<std::string> cudaChip{"cuda-chip", cl::desc("GPU architecture for --target=cuda"),
                                cl::init("sm_90"), cl::cat(category)};

  cl::opt<std::string> cudaToolkit{"cuda-toolkit",
                                   cl::desc("CUDA toolkit whose ptxas checks the PTX when present"),
                                   cl::init("/usr/local/cuda"), cl::cat(category)};
};

llvm::ManagedStatic<BackendCLOptions> clOptions;

} // namespace

void registerBackendCLOptions() { *clOptions; }

BackendOptions backendOptionsFromCL() {
  BackendOptions options;
  if (!clOptions.isConstructed())
    return options;
  options.outputFilename = clOptions->outputFilename;
  options.bundle.target = clOptions->target;
  options.bundle.cpu.cpu = clOptions->cpuName;
  options.bundle.cpu.optLevel = clOptions->optLevel;
  options.bundle.cuda.chip = clOptions->cudaChip;
  options.bundle.cuda.toolkit = clOptions->cudaToolkit;
  return options;
}

mlir::LogicalResult emitFromModule(mlir::ModuleOp module, KernelIREmit emit,
                                   const BackendOptions &backend) {
  const BundleOptions &options = backend.bundle;
  const std::string &outputFilename = backend.outputFilename;
  if (options.cpu.optLevel != 2 && options.cpu.optLevel != 3)
    return module.emitError() << "--opt-level must be 2 or 3, got " << options.cpu.optLevel;

  if (emit == KernelIREmit::Bundle) {
    if (outputFilename == "-")
      return module.emitError() << "-emit=bundle writes a shared object: give it a file with -o";
    return writeBundle(module, options, outputFilename);
  }
  std::string error;
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output)
    return module.emitError() << error;
  if (emit == KernelIREmit::LLVMDialect) {
    if (mlir::failed(getManifest(module)))
      return mlir::failure();
    mlir::PassManager pm(module.getContext());
    buildLowerToLLVMPipeline(pm);
    if (mlir::failed(pm.run(module)))
      return mlir::failure();
    module.print(output->os());
  } else if (mlir::failed(writeBundleLLVMIR(module, options, output->os()))) {
    return mlir::failure();
  }
  output->keep();
  return mlir::success();
}

/// Parses and compiles one buffer (the whole input, or one chunk of -split-input-file) in its
/// own context, so that every chunk reports its diagnostics independently.
static mlir::LogicalResult processBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                         KernelIREmit emit, const BackendOptions &options,
                                         bool verifyDiagnostics) {
  mlir::DialectRegistry registry;
  registerKernelIRDialects(registry);
  mlir::MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());

  auto run = [&] {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    return module ? emitFromModule(*module, emit, options) : mlir::failure();
  };
  if (verifyDiagnostics) {
    mlir::SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
    (void)run();
    return handler.verify();
  }
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  return run();
}

int emitFromKernelIR(llvm::StringRef inputFilename, KernelIREmit emit,
                     const BackendOptions &options, bool verifyDiagnostics, bool splitInputFile) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "nnsc: " << error << "\n";
    return 1;
  }
  auto process = [&](std::unique_ptr<llvm::MemoryBuffer> chunk, llvm::raw_ostream &) {
    return processBuffer(std::move(chunk), emit, options, verifyDiagnostics);
  };
  if (!splitInputFile)
    return mlir::failed(process(std::move(input), llvm::outs())) ? 1 : 0;
  return mlir::failed(mlir::splitAndProcessBuffer(std::move(input), process, llvm::outs())) ? 1 : 0;
}

} // namespace nnsc::bundle

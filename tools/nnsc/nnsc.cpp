//===- nnsc.cpp - the nns trace compiler driver -----------------*- C++ -*-===//

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Driver/Pipeline.h"
#include "nnsc/Frontend/Parser.h"
#include "nnsc/Schema/Architecture.h"
#include "nnsc/Target/Bundle/KernelIR.h"
#include "nnsc/Target/Bundle/KernelIRDriver.h"

#include <cstdlib>

namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .nns file>"),
                                          cl::init("-"), cl::value_desc("filename"));

enum class Action { Syntax, AST, Saves, MLIR, Scheduled, LLVM, Bundle };
static cl::opt<Action>
    emitAction("emit", cl::desc("What to produce"), cl::init(Action::MLIR),
               cl::values(clEnumValN(Action::Syntax, "syntax", "check the syntax only"),
                          clEnumValN(Action::AST, "ast", "print the syntax tree"),
                          clEnumValN(Action::Saves, "saves",
                                     "print what each trace saves: name, type, per step or not"),
                          clEnumValN(Action::MLIR, "mlir", "print the verified nns IR (default)"),
                          clEnumValN(Action::Scheduled, "scheduled",
                                     "print the per-site kernels after the scheduling passes"),
                          clEnumValN(Action::LLVM, "llvm", "print the bundle's LLVM IR"),
                          clEnumValN(Action::Bundle, "bundle",
                                     "write the bundle (.nnsb shared object) to -o")));

static cl::opt<std::string>
    modelPath("model",
              cl::desc("Model to compile against: a .gguf file or a Hugging Face model "
                       "directory (default: the bundled SmolLM2, or $NNSC_MODEL)"),
              cl::value_desc("path"), cl::init(""));

static cl::opt<bool>
    printSites("print-sites",
               cl::desc("Print the model's sites in firing order with their shapes and exit"),
               cl::init(false));

static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check that emitted diagnostics match expected-* lines in the input"),
    cl::init(false));

static cl::opt<bool>
    splitInputFile("split-input-file",
                   cl::desc("Split the input at '# -----' lines and compile each chunk on its own"),
                   cl::init(false));

static std::string resolveModelPath() {
  if (!modelPath.empty())
    return modelPath;
  if (const char *env = std::getenv("NNSC_MODEL"))
    return env;
  return NNSC_DEFAULT_MODEL;
}

/// One line per site: order, path, shape (T for the token dimension), element type.
static void printSiteTable(const nnsc::schema::Architecture &arch) {
  for (const nnsc::schema::Site &site : arch.sites()) {
    llvm::outs() << site.order << " " << site.path << " [";
    for (size_t i = 0; i < site.shape.size(); ++i) {
      if (i)
        llvm::outs() << ", ";
      if (site.shape[i] == nnsc::schema::kTokens)
        llvm::outs() << "T";
      else if (site.shape[i] == nnsc::schema::kContext)
        llvm::outs() << "S";
      else
        llvm::outs() << site.shape[i];
    }
    llvm::outs() << "] " << (site.elementType == nnsc::schema::ElementType::F32 ? "f32" : "i64")
                 << (site.writable ? "" : " read-only") << "\n";
  }
}

/// Schedules verified nns IR into per-site kernels and, past -emit=scheduled, hands the
/// kernel-level IR to the back end (nnsc/Target/Bundle/KernelIRDriver.h, whose options are
/// -o and --target).
static mlir::LogicalResult compileToBundle(mlir::ModuleOp module,
                                           const nnsc::schema::Architecture &arch,
                                           llvm::StringRef source, llvm::raw_ostream &os) {
  const bool scheduledOnly = emitAction == Action::Scheduled;
  if (mlir::failed(nnsc::driver::scheduleModule(module, arch, source, !scheduledOnly)))
    return mlir::failure();
  if (scheduledOnly) {
    module.print(os);
    os << "\n";
    return mlir::success();
  }
  using nnsc::bundle::KernelIREmit;
  return nnsc::bundle::emitFromModule(
      module, emitAction == Action::LLVM ? KernelIREmit::LLVM : KernelIREmit::Bundle,
      nnsc::bundle::backendOptionsFromCL());
}

/// Parses, checks and lowers one buffer; diagnostics go through `context`'s handler.
static mlir::LogicalResult compile(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
                                   const nnsc::schema::Architecture *arch, llvm::raw_ostream &os) {
  std::optional<nnsc::ast::Program> program = nnsc::parseProgram(sourceMgr, context);
  if (!program)
    return mlir::failure();
  switch (emitAction) {
  case Action::Syntax:
    os << sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBufferIdentifier()
       << ": syntax ok\n";
    return mlir::success();
  case Action::AST:
    nnsc::ast::print(*program, os);
    return mlir::success();
  default:
    break;
  }
  std::vector<nnsc::SaveInfo> saves;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      nnsc::driver::generateCheckedIR(*program, *arch, context, &saves);
  if (!module)
    return mlir::failure();
  if (emitAction == Action::Saves) {
    for (const nnsc::SaveInfo &s : saves)
      os << s.trace << " " << s.name << (s.perStep ? ".<step>" : "") << " " << s.type.str()
         << (s.fromCache ? " cache" : "") << "\n";
    return mlir::success();
  }
  if (emitAction != Action::MLIR) {
    llvm::StringRef source = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
    return compileToBundle(*module, *arch, source, os);
  }
  module->print(os);
  os << "\n";
  return mlir::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  nnsc::bundle::registerBackendCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "nns trace compiler\n");

  std::optional<nnsc::schema::Architecture> arch;
  if (printSites || (emitAction != Action::Syntax && emitAction != Action::AST)) {
    std::string error;
    std::optional<nnsc::schema::ModelConfig> config =
        nnsc::schema::ModelConfig::fromPath(resolveModelPath(), error);
    if (!config) {
      llvm::errs() << "nnsc: error: " << error << "\n";
      return 1;
    }
    arch.emplace(*config);
  }
  if (printSites) {
    printSiteTable(*arch);
    return 0;
  }

  auto fileOrErr = llvm::MemoryBuffer::getFileOrSTDIN(inputFilename);
  if (std::error_code ec = fileOrErr.getError()) {
    llvm::errs() << "nnsc: cannot open '" << inputFilename << "': " << ec.message() << "\n";
    return 1;
  }

  auto processChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                          llvm::raw_ostream &os) -> mlir::LogicalResult {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
    mlir::DialectRegistry registry;
    nnsc::bundle::registerKernelIRDialects(registry);
    mlir::MLIRContext context(registry);
    context.getOrLoadDialect<nnsc::nns::NNSDialect>();
    if (verifyDiagnostics) {
      mlir::SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
      (void)compile(sourceMgr, context, arch ? &*arch : nullptr, llvm::nulls());
      return handler.verify();
    }
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    return compile(sourceMgr, context, arch ? &*arch : nullptr, os);
  };
  if (splitInputFile)
    return mlir::failed(mlir::splitAndProcessBuffer(std::move(*fileOrErr), processChunk,
                                                    llvm::outs(), "# -----", "// -----"))
               ? 1
               : 0;
  return mlir::failed(processChunk(std::move(*fileOrErr), llvm::outs())) ? 1 : 0;
}

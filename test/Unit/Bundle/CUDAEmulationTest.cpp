//===- CUDAEmulationTest.cpp - the CUDA execution model, run on the host -------===//
//
// There is no GPU here, but the device kernels --target=cuda builds are plain LLVM-dialect
// code (events, suspension) until NVPTX code generation. This test takes them right before
// that point, compiles them for the host instead, and runs them the way docs/BundleABI.md
// ("CUDA execution") says a runtime must: launch, replay the events, run the module call,
// relaunch until the kernel no longer suspends. Everything recorded (callbacks in order, saved
// values, the site tensor after the call) must equal what the host kernel of the same bundle
// does with the ordinary nnsc_runtime callbacks.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Bundle/BundleABI.h"
#include "nnsc/Runtime/Bundle/Bundle.h"
#include "nnsc/Runtime/Bundle/CudaSiteCall.h"
#include "nnsc/Target/Bundle/BundleEmitter.h"
#include "nnsc/Target/Bundle/KernelIR.h"
#include "nnsc/Target/Bundle/Manifest.h"
#include "nnsc/Target/CPU/CPUTarget.h"
#include "nnsc/Target/CPU/SharedObjectLinker.h"
#include "nnsc/Target/CUDA/CUDATarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace mlir;

/// One callback as the runtime sees it.
struct Record {
  std::string kind;
  void *request = nullptr;
  int64_t number = 0; ///< save index or module index
  int64_t step = 0;
  std::string message;
  std::vector<uint8_t> bytes; ///< saved or module-input elements, row-major

  bool operator==(const Record &) const = default;
};

void PrintTo(const Record &r, std::ostream *os) {
  *os << r.kind << "(" << r.request << ", " << r.number << ", " << r.step << ", '" << r.message
      << "', " << r.bytes.size() << " bytes)";
}

int64_t dtypeSize(nnsc_dtype dtype) { return int64_t(nnsc::dtypeBytes(dtype)); }

/// The bytes of a tensor's elements, row-major.
std::vector<uint8_t> elements(const nnsc_tensor &t) {
  int64_t shape[NNSC_MAX_RANK] = {1, 1, 1, 1}, strides[NNSC_MAX_RANK] = {0, 0, 0, 0};
  for (int32_t d = 0; d < t.rank; ++d) {
    shape[d] = t.shape[d];
    strides[d] = t.strides[d];
  }
  int64_t size = dtypeSize(t.dtype);
  std::vector<uint8_t> out;
  const auto *data = static_cast<const uint8_t *>(t.data);
  for (int64_t a = 0; a < shape[0]; ++a)
    for (int64_t b = 0; b < shape[1]; ++b)
      for (int64_t c = 0; c < shape[2]; ++c)
        for (int64_t d = 0; d < shape[3]; ++d) {
          const uint8_t *element =
              data + size * (a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3]);
          out.insert(out.end(), element, element + size);
        }
  return out;
}

/// The module both sides call, on f32 elements: output[i] = 2 * input[i mod n] + 1 + i / n,
/// row-major (the last term keeps argmax over a longer output unambiguous).
std::vector<float> applyModule(const std::vector<uint8_t> &input, int64_t outputSize) {
  std::vector<float> in(input.size() / sizeof(float));
  std::memcpy(in.data(), input.data(), input.size());
  std::vector<float> out(outputSize);
  int64_t n = static_cast<int64_t>(in.size());
  for (int64_t i = 0; i < outputSize; ++i)
    out[i] = 2.0f * in[i % n] + 1.0f + static_cast<float>(i / n);
  return out;
}

int64_t numel(const nnsc_tensor &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d)
    n *= t.shape[d];
  return n;
}

/// The host kernel's callbacks, recording into `records`.
struct HostRuntime {
  std::vector<Record> records;

  static HostRuntime &self(void *ctx) { return *static_cast<HostRuntime *>(ctx); }
  static int32_t callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                            nnsc_tensor *output) {
    std::vector<uint8_t> in = elements(*input);
    self(ctx).records.push_back({"call_module", nullptr, module, 0, "", in});
    std::vector<float> out = applyModule(in, numel(*output));
    // The kernels under test pass contiguous outputs.
    EXPECT_EQ(output->strides[output->rank - 1], 1);
    std::memcpy(output->data, out.data(), out.size() * sizeof(float));
    return 0;
  }
  static void reportError(void *ctx, void *request, const char *message, int64_t arg0,
                          int64_t arg1) {
    self(ctx).records.push_back(
        {"error", request, 0, 0, nnsc::errorMessage(message, arg0, arg1), {}});
  }
  static void save(void *ctx, void *request, int32_t index, int64_t step,
                   const nnsc_tensor *value) {
    self(ctx).records.push_back({"save", request, index, step, "", elements(*value)});
  }
  static void stop(void *ctx, void *request) {
    self(ctx).records.push_back({"stop", request, 0, 0, "", {}});
  }
  static void finish(void *ctx, void *request) {
    self(ctx).records.push_back({"finish", request, 0, 0, "", {}});
  }
  static void skip(void *ctx, void *request) {
    self(ctx).records.push_back({"skip", request, 0, 0, "", {}});
  }
  /// The callbacks, recording into this object.
  nnsc_runtime table() { return {this, callModule, reportError, save, stop, finish, skip}; }
};

using DeviceEntry = void (*)(nnsc_tensor *, const nnsc_group *, int32_t, nnsc_cuda_status *);

/// Device memory that is host memory, and the device code compiled for the host as the kernel.
class HostPort final : public nnsc::DevicePort {
public:
  HostPort(DeviceEntry entry, nnsc_tensor *value, const std::vector<nnsc_group> &groups,
           nnsc_cuda_status *status)
      : entry(entry), value(value), groups(groups), status(status) {}

  void toHost(void *dest, const void *source, int64_t bytes) override {
    std::memcpy(dest, source, size_t(bytes));
  }
  void toDevice(void *dest, const void *source, int64_t bytes) override {
    std::memcpy(dest, source, size_t(bytes));
  }
  void *moduleOutput(int64_t bytes) override {
    output.resize(size_t(bytes));
    return output.data();
  }
  void launch() override {
    entry(value, groups.data(), static_cast<int32_t>(groups.size()), status);
  }

private:
  DeviceEntry entry;
  nnsc_tensor *value;
  const std::vector<nnsc_group> &groups;
  nnsc_cuda_status *status;
  std::vector<char> output;
};

/// Room for one site call's events and sink.
struct Capacity {
  int64_t events = 64;
  int64_t sinkBytes = 1 << 20;
  int64_t maxLaunches = 100;
};

/// The runtime's side of docs/BundleABI.md "CUDA execution" (nnsc::runCudaSiteCall, the code
/// the CUDA launcher runs), with host memory standing in for device memory. The callbacks it
/// replays are recorded as the host kernel's are; `failure` gets what runCudaSiteCall returned.
std::vector<Record> runDevice(DeviceEntry entry, const nnsc_bundle_query_fn query,
                              int64_t scratchBytes, nnsc_tensor *value,
                              const std::vector<nnsc_group> &groups, int *launches,
                              std::string *failure = nullptr, Capacity capacity = {}) {
  std::vector<nnsc_cuda_event> events(size_t(capacity.events));
  std::vector<char> sink(static_cast<size_t>(capacity.sinkBytes));
  std::vector<char> scratch(static_cast<size_t>(scratchBytes));
  nnsc_cuda_status status{};
  HostPort port(entry, value, groups, &status);
  nnsc::CudaSiteBuffers buffers;
  buffers.status = &status;
  buffers.events = events.data();
  buffers.eventCapacity = capacity.events;
  buffers.sink = sink.data();
  buffers.sinkBytes = capacity.sinkBytes;
  buffers.scratch = scratch.data();
  HostRuntime device;
  nnsc_runtime rt = device.table();
  int64_t count = 0;
  std::string result =
      nnsc::runCudaSiteCall(port, buffers, *query()->cuda, rt, capacity.maxLaunches, &count);
  *launches = static_cast<int>(count);
  if (failure)
    *failure = result;
  else
    EXPECT_EQ(result, "");
  return device.records;
}

class CUDAEmulationTest : public ::testing::Test {
protected:
  void TearDown() override {
    for (void *handle : handles)
      dlclose(handle);
    for (const std::string &path : paths)
      llvm::sys::fs::remove(path);
  }

  std::string tempPath(const char *suffix) {
    llvm::SmallString<128> path;
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("cuda-emulation", suffix, path));
    paths.push_back(path.str().str());
    return paths.back();
  }

  void *open(const std::string &path) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << dlerror();
    handles.push_back(handle);
    return handle;
  }

  /// The gpu.module's functions, as a host shared object.
  void *compileDeviceForHost(ModuleOp device) {
    auto gpuModule = *device.getOps<gpu::GPUModuleOp>().begin();
    OwningOpRef<ModuleOp> host = ModuleOp::create(device.getLoc());
    OpBuilder builder(host->getBody(), host->getBody()->begin());
    for (Operation &op : gpuModule.getBody()->getOperations()) {
      Operation *copy = builder.clone(op);
      copy->removeAttr(gpu::GPUDialect::getKernelFuncAttrName());
      copy->removeAttr("nvvm.kernel");
    }
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> module = translateModuleToLLVMIR(*host, context, "emulation");
    EXPECT_NE(module, nullptr);
    if (!module)
      return nullptr;
    std::string error;
    std::unique_ptr<llvm::TargetMachine> machine = nnsc::cpu::createTargetMachine({}, error);
    EXPECT_NE(machine, nullptr) << error;
    module->setDataLayout(machine->createDataLayout());
    module->setTargetTriple(machine->getTargetTriple());
    nnsc::cpu::optimize(*module, *machine, 2);
    llvm::SmallVector<char, 0> object;
    std::string path = tempPath("so");
    EXPECT_TRUE(nnsc::cpu::emitObject(*module, *machine, object, error)) << error;
    EXPECT_TRUE(nnsc::cpu::linkSharedObject(object, path, error)) << error;
    return open(path);
  }

  /// Compiles `kernels` (kernel-level IR) into a CUDA bundle and its device code for the host,
  /// then runs every kernel both ways on the same random site tensor, params and frames, with
  /// three groups (the second one empty). Returns the launches each device kernel took.
  std::vector<int> compareKernels(ModuleOp kernels);

  std::vector<void *> handles;
  std::vector<std::string> paths;
  /// Room the device side gets; with collectFailures, compareKernels only records what each
  /// device run returned in `failures` instead of comparing.
  Capacity capacity;
  bool collectFailures = false;
  std::vector<std::string> failures;
};

std::vector<int> CUDAEmulationTest::compareKernels(ModuleOp kernels) {
  std::vector<int> launchCounts;
  nnsc::bundle::BundleOptions options;
  options.target = nnsc::bundle::TargetKind::CUDA;
  std::string bundlePath = tempPath("nnsb");
  OwningOpRef<ModuleOp> forBundle = cast<ModuleOp>(kernels->clone());
  EXPECT_TRUE(succeeded(nnsc::bundle::writeBundle(*forBundle, options, bundlePath)));
  auto query =
      reinterpret_cast<nnsc_bundle_query_fn>(dlsym(open(bundlePath), NNSC_BUNDLE_QUERY_SYMBOL));
  if (!query)
    return launchCounts;
  const nnsc_bundle &bundle = *query();
  EXPECT_NE(bundle.cuda, nullptr);

  // The same device code, stopped before NVPTX and compiled for the host.
  FailureOr<nnsc::nns::ManifestAttr> manifest = nnsc::bundle::getManifest(kernels);
  EXPECT_TRUE(succeeded(manifest));
  if (failed(manifest))
    return launchCounts;
  nnsc::bundle::DeviceCode code;
  OwningOpRef<ModuleOp> device =
      nnsc::cuda::lowerDeviceKernels(kernels, *manifest, options.cuda, code);
  EXPECT_TRUE(device);
  void *emulated = device ? compileDeviceForHost(*device) : nullptr;
  if (!bundle.cuda || !emulated)
    return launchCounts;

  const nnsc_trace_desc &trace = bundle.traces[0];
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<std::vector<uint8_t>> paramData;
  std::vector<nnsc_tensor> params;
  for (int32_t i = 0; i < trace.num_params; ++i) {
    const nnsc_param_desc &desc = trace.params[i];
    nnsc_tensor t{nullptr, desc.dtype, desc.rank, {}, {}};
    int64_t count = 1;
    for (int32_t d = desc.rank - 1; d >= 0; --d) {
      t.shape[d] = desc.shape[d];
      t.strides[d] = count;
      count *= desc.shape[d];
    }
    std::vector<uint8_t> bytes(count * dtypeSize(desc.dtype));
    for (int64_t e = 0; e < count; ++e) {
      if (desc.dtype == NNSC_DTYPE_F32) {
        float x = normal(rng);
        std::memcpy(bytes.data() + 4 * e, &x, 4);
      } else {
        bytes[e * dtypeSize(desc.dtype)] = 1;
      }
    }
    paramData.push_back(std::move(bytes));
    params.push_back(t);
  }
  for (int32_t i = 0; i < trace.num_params; ++i)
    params[i].data = paramData[i].data();

  const int64_t rows = 5, hidden = bundle.hidden;
  std::vector<float> site(rows * hidden);
  for (float &x : site)
    x = normal(rng);
  int requests[3];
  auto groupsOver = [&](std::vector<std::vector<uint8_t>> &frames) {
    frames.assign(3, std::vector<uint8_t>(trace.frame_bytes + 1, 0));
    return std::vector<nnsc_group>{{0, 3, 0, 0, 0, frames[0].data(), params.data(), &requests[0]},
                                   {3, 0, 0, 4, 0, frames[1].data(), params.data(), &requests[1]},
                                   {3, 2, 7, 9, 0, frames[2].data(), params.data(), &requests[2]}};
  };
  auto tensorOver = [&](std::vector<float> &data) {
    return nnsc_tensor{data.data(), NNSC_DTYPE_F32, 2, {rows, hidden, 0, 0}, {hidden, 1, 0, 0}};
  };

  for (int32_t k = 0; k < bundle.cuda->num_kernels; ++k) {
    const nnsc_cuda_kernel &cudaKernel = bundle.cuda->kernels[k];
    SCOPED_TRACE(cudaKernel.entry);
    EXPECT_EQ(code.kernels[k].scratchBytes, cudaKernel.scratch_bytes);
    auto entry = reinterpret_cast<DeviceEntry>(dlsym(emulated, cudaKernel.entry));
    EXPECT_NE(entry, nullptr);
    if (!entry)
      continue;

    std::vector<float> hostSite = site;
    nnsc_tensor hostValue = tensorOver(hostSite);
    std::vector<std::vector<uint8_t>> hostFrames;
    std::vector<nnsc_group> hostGroups = groupsOver(hostFrames);
    HostRuntime host;
    nnsc_runtime rt = host.table();
    EXPECT_EQ(cudaKernel.host(&hostValue, hostGroups.data(), 3, &rt), 0);

    std::vector<float> deviceSite = site;
    nnsc_tensor deviceValue = tensorOver(deviceSite);
    std::vector<std::vector<uint8_t>> deviceFrames;
    std::vector<nnsc_group> deviceGroups = groupsOver(deviceFrames);
    int launches = 0;
    std::string failure;
    std::vector<Record> deviceRecords =
        runDevice(entry, query, cudaKernel.scratch_bytes, &deviceValue, deviceGroups, &launches,
                  &failure, capacity);
    if (collectFailures) {
      failures.push_back(failure);
      continue;
    }
    EXPECT_EQ(failure, "");
    EXPECT_EQ(deviceRecords, host.records);
    EXPECT_EQ(deviceSite, hostSite);
    EXPECT_EQ(deviceFrames, hostFrames);
    launchCounts.push_back(launches);
  }
  return launchCounts;
}

class CUDAEmulationKernels : public CUDAEmulationTest {
protected:
  CUDAEmulationKernels() : context(registry()) {}

  static DialectRegistry registry() {
    DialectRegistry registry;
    nnsc::bundle::registerKernelIRDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    return registry;
  }

  /// Kernel-level IR of a canonical program for SmolLM2, as nnsc schedules and lowers it.
  OwningOpRef<ModuleOp> canonical(const std::string &name) {
    std::string out = tempPath("mlir");
    std::string command = std::string(NNSC_TOOLS_DIR "/nnsc ") + NNSC_SOURCE_DIR +
                          "/examples/canonical/" + name + " -emit=scheduled | " +
                          NNSC_TOOLS_DIR "/nns-opt --nns-lower-to-kernels -o " + out;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return parseSourceFile<ModuleOp>(out, &context);
  }

  MLIRContext context;
};

/// Every callback, and a module call inside the group loop: two non-empty groups, one call
/// each, so three launches.
TEST_F(CUDAEmulationKernels, DeviceEventsReplayAsHostCallbacks) {
  OwningOpRef<ModuleOp> kernels =
      parseSourceFile<ModuleOp>(NNSC_SOURCE_DIR "/test/Target/CUDA/device-events.mlir", &context);
  ASSERT_TRUE(kernels);
  EXPECT_EQ(compareKernels(*kernels), std::vector<int>{3});
}

/// A launch that records more events than it has room for fails the call, saying so.
TEST_F(CUDAEmulationKernels, EventOverflowFailsTheCall) {
  OwningOpRef<ModuleOp> kernels =
      parseSourceFile<ModuleOp>(NNSC_SOURCE_DIR "/test/Target/CUDA/device-events.mlir", &context);
  ASSERT_TRUE(kernels);
  capacity.events = 1;
  collectFailures = true;
  compareKernels(*kernels);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("more than the 1 it had room for"), std::string::npos) << failures[0];
}

/// A save that does not fit the sink fails the call instead of writing past it.
TEST_F(CUDAEmulationKernels, SinkOverflowFailsTheCall) {
  OwningOpRef<ModuleOp> kernels = canonical("01-capture.nns");
  ASSERT_TRUE(kernels);
  capacity.sinkBytes = 8;
  collectFailures = true;
  compareKernels(*kernels);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0], "a save did not fit the sink of 8 bytes");
}

/// A kernel that still suspends after the launch limit is stopped there.
TEST_F(CUDAEmulationKernels, LaunchLimitStopsASuspendingKernel) {
  OwningOpRef<ModuleOp> kernels = canonical("04-logit-lens.nns");
  ASSERT_TRUE(kernels);
  capacity.maxLaunches = 1;
  collectFailures = true;
  compareKernels(*kernels);
  ASSERT_FALSE(failures.empty());
  for (const std::string &failure : failures)
    EXPECT_EQ(failure, "the kernel still suspends after 1 launches");
}

/// norm then lm_head on the last row, argmax, save: two suspensions for the one group at the
/// prefill (the others are empty or at a later step), with stack buffers and the group loop's
/// state kept in scratch between the launches.
TEST_F(CUDAEmulationKernels, LogitLensSuspendsAtBothModuleCalls) {
  OwningOpRef<ModuleOp> kernels = canonical("04-logit-lens.nns");
  ASSERT_TRUE(kernels);
  EXPECT_EQ(compareKernels(*kernels), (std::vector<int>{3, 3}));
}

/// Kernels without module calls run in one launch: params, a data-dependent if, writes.
TEST_F(CUDAEmulationKernels, CanonicalKernelsWithoutCallsRunInOneLaunch) {
  for (const char *name :
       {"01-capture.nns", "02-steering.nns", "05-probe-stop.nns", "09-conditional-steering.nns"}) {
    SCOPED_TRACE(name);
    OwningOpRef<ModuleOp> kernels = canonical(name);
    ASSERT_TRUE(kernels);
    EXPECT_EQ(compareKernels(*kernels), std::vector<int>{1});
  }
}

} // namespace

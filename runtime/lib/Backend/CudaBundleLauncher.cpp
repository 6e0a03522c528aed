//===- CudaBundleLauncher.cpp - bundle kernels on a CUDA device -*- C++ -*-===//

#include "CudaBundleLauncher.h"

#include "nnsc/Runtime/Backend/BackendError.h"
#include "nnsc/Runtime/Bundle/CudaSiteCall.h"
#include "nnsc/Runtime/Kernels/DeviceHeapCuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace nnsc {

namespace {

/// The driver API functions the launcher calls, found through the CUDA runtime
/// (cudaGetDriverEntryPointByVersion) rather than linked: libcuda.so.1 comes with the GPU
/// driver, which machines that only build (this one) do not have.
struct DriverApi {
  decltype(&::cuInit) init;
  decltype(&::cuDeviceGet) deviceGet;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuModuleUnload) moduleUnload;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync;
  decltype(&::cuStreamSynchronize) streamSynchronize;
  decltype(&::cuGetErrorName) getErrorName;
  decltype(&::cuGetErrorString) getErrorString;

  static const DriverApi &get() {
    static const DriverApi api = load();
    return api;
  }

private:
  template <typename Fn> static void find(Fn &fn, const char *symbol) {
    void *address = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t error =
        cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found);
    if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || !address)
      throw BackendError(std::string("the CUDA driver has no '") + symbol +
                         "' (cudaGetDriverEntryPointByVersion: " + cudaGetErrorString(error) + ")");
    fn = reinterpret_cast<Fn>(address);
  }
  static DriverApi load() {
    DriverApi api{};
    find(api.init, "cuInit");
    find(api.deviceGet, "cuDeviceGet");
    find(api.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    find(api.primaryCtxRelease, "cuDevicePrimaryCtxRelease");
    find(api.ctxSetCurrent, "cuCtxSetCurrent");
    find(api.moduleLoadDataEx, "cuModuleLoadDataEx");
    find(api.moduleGetFunction, "cuModuleGetFunction");
    find(api.moduleUnload, "cuModuleUnload");
    find(api.launchKernel, "cuLaunchKernel");
    find(api.memcpyHtoDAsync, "cuMemcpyHtoDAsync");
    find(api.memcpyDtoHAsync, "cuMemcpyDtoHAsync");
    find(api.streamSynchronize, "cuStreamSynchronize");
    find(api.getErrorName, "cuGetErrorName");
    find(api.getErrorString, "cuGetErrorString");
    return api;
  }
};

const DriverApi &driver() { return DriverApi::get(); }

void check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  const char *text = nullptr;
  driver().getErrorName(result, &name);
  driver().getErrorString(result, &text);
  throw BackendError(std::string(what) + ": " + (name ? name : "CUDA error") + " (" +
                     (text ? text : "no description") + ")");
}

constexpr int64_t kAlign = 16;
int64_t aligned(int64_t offset) { return (offset + kAlign - 1) / kAlign * kAlign; }

/// The driver calls of one site call, on the engine's stream.
class CudaPort final : public DevicePort {
public:
  CudaPort(CUstream stream, CUfunction function, void **arguments,
           std::function<void *(int64_t)> outputBuffer)
      : stream(stream), function(function), arguments(arguments),
        outputBuffer(std::move(outputBuffer)) {}

  void toHost(void *dest, const void *source, int64_t bytes) override {
    if (bytes == 0)
      return;
    check(driver().memcpyDtoHAsync(dest, reinterpret_cast<CUdeviceptr>(source), size_t(bytes),
                                   stream),
          "copying a bundle kernel's results to the host");
    check(driver().streamSynchronize(stream), "waiting for a bundle kernel's results");
  }
  void toDevice(void *dest, const void *source, int64_t bytes) override {
    if (bytes == 0)
      return;
    // From pageable memory: the driver has taken the bytes when the call returns.
    check(driver().memcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dest), source, size_t(bytes),
                                   stream),
          "copying a bundle kernel's arguments to the device");
  }
  void *moduleOutput(int64_t bytes) override { return outputBuffer(bytes); }
  void launch() override {
    check(driver().launchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, arguments, nullptr),
          "launching a bundle kernel");
    check(driver().streamSynchronize(stream), "running a bundle kernel");
  }

private:
  CUstream stream;
  CUfunction function;
  void **arguments;
  std::function<void *(int64_t)> outputBuffer;
};

/// Bytes of `t` if it is contiguous, else -1.
int64_t contiguousParamBytes(const nnsc_tensor &t) {
  int64_t stride = 1;
  for (int32_t d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != stride)
      return -1;
    stride *= t.shape[d];
  }
  return contiguousBytes(t);
}

/// An upper bound of the sink bytes one launch needs: every save of the trace for every group
/// (a save with the token dimension holds at most all of the value's rows), plus one module
/// input no larger than the site value.
int64_t sinkBound(const BundleTrace &trace, const nnsc_tensor &value, size_t groups) {
  const int64_t rows = value.rank > 0 ? value.shape[0] : 1;
  int64_t bytes = 1 << 20;
  for (const BundleSave &save : trace.saves) {
    int64_t size = int64_t(dtypeBytes(save.dtype));
    bool tokens = false;
    for (int64_t d : save.shape) {
      tokens |= d == NNSC_DIM_TOKENS;
      size *= d == NNSC_DIM_TOKENS ? rows : d;
    }
    bytes += tokens ? size : size * int64_t(groups);
  }
  const int64_t valueBytes = contiguousBytes(value);
  return aligned(bytes + (valueBytes > 0 ? valueBytes : 0));
}

} // namespace

CudaBundleLauncher::CudaBundleLauncher(std::shared_ptr<const Bundle> loaded, torch::Device device)
    : bundle(std::move(loaded)), device(device) {
  const nnsc_cuda_code *code = bundle->cuda();
  if (!code)
    throw BackendError("the bundle has no CUDA code: compile it with nnsc --target=cuda to run "
                       "it on the CUDA backend");
  check(driver().init(0), "cuInit");
  CUdevice dev = 0;
  check(driver().deviceGet(&dev, device.index()), "cuDeviceGet");
  CUcontext primary = nullptr;
  check(driver().primaryCtxRetain(&primary, dev), "retaining the device's primary context");
  context = primary;
  check(driver().ctxSetCurrent(primary), "cuCtxSetCurrent");
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log))};
  CUmodule loadedModule = nullptr;
  CUresult result = driver().moduleLoadDataEx(&loadedModule, code->ptx, 2, options, values);
  if (result != CUDA_SUCCESS) {
    const char *name = nullptr;
    driver().getErrorName(result, &name);
    throw BackendError(std::string("the driver refused the bundle's PTX (built for ") + code->chip +
                       "): " + (name ? name : "CUDA error") + "\n" + log);
  }
  module = loadedModule;
  for (int32_t k = 0; k < code->num_kernels; ++k) {
    const nnsc_cuda_kernel &kernel = code->kernels[k];
    CUfunction function = nullptr;
    check(driver().moduleGetFunction(&function, loadedModule, kernel.entry),
          (std::string("finding the bundle's kernel '") + kernel.entry + "'").c_str());
    kernels[kernel.host] = {function, kernel.scratch_bytes};
  }
}

CudaBundleLauncher::~CudaBundleLauncher() {
  if (module)
    driver().moduleUnload(static_cast<CUmodule>(module));
  if (context) {
    CUdevice dev = 0;
    if (driver().deviceGet(&dev, device.index()) == CUDA_SUCCESS)
      driver().primaryCtxRelease(dev);
  }
}

char *CudaBundleLauncher::deviceBuffer(torch::Tensor &slot, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, kAlign);
  if (!slot.defined() || slot.numel() < bytes)
    slot = torch::empty({bytes}, torch::dtype(torch::kUInt8).device(device));
  return static_cast<char *>(slot.data_ptr());
}

std::string CudaBundleLauncher::run(const BundleTrace &trace, const BundleSite &site,
                                    const nnsc_tensor &value, std::span<const nnsc_group> groups,
                                    const nnsc_runtime &rt) {
  auto kernel = kernels.find(site.kernel);
  if (kernel == kernels.end())
    return "the bundle has no device copy of this site's kernel";
  try {
    c10::cuda::CUDAGuard guard(device);
    check(driver().ctxSetCurrent(static_cast<CUcontext>(context)), "cuCtxSetCurrent");

    // 1. The arguments, laid out on the host with their device addresses.
    const size_t n = groups.size();
    const int64_t frameBytes = trace.frameBytes;
    const size_t numParams = trace.params.size();
    int64_t size = aligned(sizeof(nnsc_tensor));
    const int64_t groupsAt = size;
    size = aligned(size + int64_t(n * sizeof(nnsc_group)));
    const int64_t framesAt = size;
    size = aligned(size + int64_t(n) * aligned(frameBytes));
    std::map<const nnsc_tensor *, int64_t> paramTables; // by host table: its offset
    for (const nnsc_group &g : groups) {
      if (numParams == 0 || paramTables.count(g.params))
        continue;
      paramTables[g.params] = size;
      size = aligned(size + int64_t(numParams * sizeof(nnsc_tensor)));
      for (size_t p = 0; p < numParams; ++p) {
        const int64_t bytes = contiguousParamBytes(g.params[p]);
        if (bytes < 0)
          return "param '" + trace.params[p].name + "' is not a contiguous tensor";
        size = aligned(size + bytes);
      }
    }
    char *base = deviceBuffer(arguments, size);
    auto at = [&](int64_t offset) { return base + offset; };
    std::vector<char> staging(size_t(size), 0);
    std::memcpy(staging.data(), &value, sizeof value);
    for (auto &[table, offset] : paramTables) {
      int64_t dataAt = aligned(offset + int64_t(numParams * sizeof(nnsc_tensor)));
      for (size_t p = 0; p < numParams; ++p) {
        nnsc_tensor t = table[p];
        const int64_t bytes = contiguousParamBytes(t);
        std::memcpy(staging.data() + dataAt, t.data, size_t(bytes));
        t.data = at(dataAt);
        std::memcpy(staging.data() + offset + int64_t(p * sizeof(nnsc_tensor)), &t, sizeof t);
        dataAt = aligned(dataAt + bytes);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      nnsc_group g = groups[i];
      const int64_t frameAt = framesAt + int64_t(i) * aligned(frameBytes);
      if (g.frame && frameBytes > 0) {
        std::memcpy(staging.data() + frameAt, g.frame, size_t(frameBytes));
        g.frame = at(frameAt);
      }
      if (numParams > 0)
        g.params = reinterpret_cast<const nnsc_tensor *>(at(paramTables[groups[i].params]));
      std::memcpy(staging.data() + groupsAt + int64_t(i * sizeof(nnsc_group)), &g, sizeof g);
    }

    // 2. The status, events, sink and scratch; then launch and replay.
    CudaSiteBuffers buffers;
    buffers.eventCapacity = int64_t(n) * int64_t(trace.saves.size() + 6) + 16;
    buffers.sinkBytes = sinkBound(trace, value, n);
    buffers.status =
        reinterpret_cast<nnsc_cuda_status *>(deviceBuffer(status, sizeof(nnsc_cuda_status)));
    buffers.events = reinterpret_cast<nnsc_cuda_event *>(
        deviceBuffer(events, buffers.eventCapacity * int64_t(sizeof(nnsc_cuda_event))));
    buffers.sink = deviceBuffer(sink, buffers.sinkBytes);
    buffers.scratch = kernel->second.scratchBytes > 0
                          ? deviceBuffer(scratch, kernel->second.scratchBytes)
                          : nullptr;

    CUstream stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
    void *valueArg = at(0);
    void *groupsArg = at(groupsAt);
    int32_t countArg = int32_t(n);
    void *statusArg = buffers.status;
    void *argv[] = {&valueArg, &groupsArg, &countArg, &statusArg};
    CudaPort port(stream, static_cast<CUfunction>(kernel->second.function), argv,
                  [this](int64_t bytes) -> void * { return deviceBuffer(moduleOutput, bytes); });
    port.toDevice(base, staging.data(), size);
    // A kernel suspends at most once per module call site per group and step.
    const int64_t maxLaunches = int64_t(n + 1) * 64 + 1;
    std::string failure = runCudaSiteCall(port, buffers, *bundle->cuda(), rt, maxLaunches);

    // 3. The frames, back into the requests.
    if (frameBytes > 0 && n > 0) {
      port.toHost(staging.data() + framesAt, at(framesAt), int64_t(n) * aligned(frameBytes));
      for (size_t i = 0; i < n; ++i)
        if (groups[i].frame)
          std::memcpy(groups[i].frame, staging.data() + framesAt + int64_t(i) * aligned(frameBytes),
                      size_t(frameBytes));
    }
    return failure;
  } catch (const std::exception &e) {
    return e.what();
  }
}

std::string CudaBundleLauncher::freeFrameHeap(std::span<void *const> pointers) {
  if (pointers.empty())
    return "";
  try {
    c10::cuda::CUDAGuard guard(device);
    CUstream stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
    // After every site call of the request on this stream; the list's memory goes back to the
    // caching allocator, which reuses it only for work queued after the free kernel.
    const auto bytes = int64_t(pointers.size_bytes());
    torch::Tensor list = torch::empty({bytes}, torch::dtype(torch::kUInt8).device(device));
    check(driver().memcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(list.data_ptr()), pointers.data(),
                                   size_t(bytes), stream),
          "copying device-heap pointers to the device");
    cudaError_t error = kernels::freeDeviceHeapCuda(static_cast<void *const *>(list.data_ptr()),
                                                    int64_t(pointers.size()), stream);
    if (error != cudaSuccess)
      return std::string("launching the device-heap free kernel: ") + cudaGetErrorString(error);
    return "";
  } catch (const std::exception &e) {
    return e.what();
  }
}

} // namespace nnsc

//===- DeviceHeap.cu - freeing device-heap allocations ----------*- CUDA -*-===//

#include "nnsc/Runtime/Kernels/DeviceHeapCuda.h"

#include <cuda_runtime.h>

namespace nnsc::kernels {
namespace {

constexpr int kThreads = 128;

__global__ void freeDeviceHeapKernel(void *const *pointers, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count && pointers[i])
    free(pointers[i]);
}

} // namespace

cudaError_t freeDeviceHeapCuda(void *const *pointers, int64_t count, cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  freeDeviceHeapKernel<<<blocks, kThreads, 0, stream>>>(pointers, count);
  return cudaGetLastError();
}

} // namespace nnsc::kernels

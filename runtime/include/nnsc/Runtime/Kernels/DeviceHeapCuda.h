//===- DeviceHeapCuda.h - freeing device-heap allocations -------*- C++ -*-===//
//
// Device code's malloc() takes from the CUDA context's device heap, which only device code's
// free() returns: a host cannot free a device-heap pointer. A bundle kernel run as device code
// keeps its run-time-shaped frame values in such copies (docs/BundleABI.md, "The frame"); the
// runtime frees the ones a finished request still holds with this kernel. The heap belongs to
// the context, not to a module, so this kernel frees what the bundle's module allocated.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_KERNELS_DEVICEHEAPCUDA_H
#define NNSC_RUNTIME_KERNELS_DEVICEHEAPCUDA_H

#include <cstdint>
#include <cuda_runtime_api.h>

namespace nnsc::kernels {

/// Calls device free() on each of `count` pointers, read from `pointers` (device memory), on
/// `stream`. Null pointers are skipped (free(nullptr) is a no-op in device code too).
cudaError_t freeDeviceHeapCuda(void *const *pointers, int64_t count, cudaStream_t stream);

} // namespace nnsc::kernels

#endif // NNSC_RUNTIME_KERNELS_DEVICEHEAPCUDA_H

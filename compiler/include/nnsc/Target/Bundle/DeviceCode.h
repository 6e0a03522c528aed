//===- DeviceCode.h - the CUDA part of a bundle -----------------*- C++ -*-===//
//
// What --target=cuda adds to a bundle (nnsc_cuda_code of BundleABI.h): the PTX, one device
// kernel per host kernel with the resources its launches need, and the error messages the
// device kernels refer to by index.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_DEVICECODE_H
#define NNSC_TARGET_BUNDLE_DEVICECODE_H

#include <cstdint>
#include <string>
#include <vector>

namespace nnsc::bundle {

/// The device copy of one host kernel (nnsc_cuda_kernel).
struct DeviceKernel {
  std::string hostKernel; ///< symbol of the host kernel in the bundle
  std::string entry;      ///< PTX entry name
  int64_t scratchBytes = 0;
  int32_t numCalls = 0;
};

/// nnsc_cuda_code.
struct DeviceCode {
  std::string ptx;
  std::string chip;
  std::vector<DeviceKernel> kernels;
  std::vector<std::string> messages;
};

} // namespace nnsc::bundle

#endif // NNSC_TARGET_BUNDLE_DEVICECODE_H

//===- SafetensorsFuzzer.cpp - fuzz the safetensors reader ----------------===//
//
// A .safetensors file from anywhere (weights of a Hugging Face model directory, params given as
// @FILE): the header length, the JSON header, every tensor's dtype, shape and data bounds.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "nnsc/Runtime/Models/SafetensorsFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nnsc::fuzz::MemoryFile file(data, size);
  std::string error;
  std::unique_ptr<nnsc::SafetensorsFile> st = nnsc::SafetensorsFile::open(file.path(), error);
  if (!st)
    return 0;
  for (const auto &[name, info] : st->tensors()) {
    nnsc::fuzz::touch(info.data, size_t(info.size));
    // The reader promises size == elements * dtype size for every tensor it accepts.
    if (uint64_t(info.numElements()) * uint64_t(nnsc::safetensorsDtypeSize(info.dtype)) !=
        info.size)
      __builtin_trap();
  }
  return 0;
}

//===- FuzzSupport.h - helpers shared by the fuzz targets -------*- C++ -*-===//
//
// The readers of model files take a path (they mmap the file): MemoryFile puts the fuzzer's
// bytes in an anonymous in-memory file (memfd) and names it by /proc/self/fd/N, so the real
// open/fstat/mmap path runs without touching the disk.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_FUZZ_FUZZSUPPORT_H
#define NNSC_TEST_FUZZ_FUZZSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

namespace nnsc::fuzz {

class MemoryFile {
public:
  MemoryFile(const uint8_t *data, size_t size) {
    fd = ::memfd_create("nnsc-fuzz", MFD_CLOEXEC);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    for (size_t done = 0; done < size;) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) {
        std::perror("write");
        std::abort();
      }
      done += size_t(n);
    }
  }
  ~MemoryFile() { ::close(fd); }
  MemoryFile(const MemoryFile &) = delete;
  MemoryFile &operator=(const MemoryFile &) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }

private:
  int fd = -1;
};

/// Reads every byte of [data, data + size): under AddressSanitizer a view that points outside
/// its buffer is reported here rather than silently trusted.
inline void touch(const uint8_t *data, size_t size) {
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < size; ++i)
    sink = sink ^ data[i];
  (void)sink;
}

/// Splits the input at the first occurrence of `separator`: the part before and after it
/// (everything and nothing when it does not occur).
inline std::pair<std::string_view, std::string_view> splitAt(std::string_view input,
                                                             std::string_view separator) {
  size_t at = input.find(separator);
  if (at == std::string_view::npos)
    return {input, {}};
  return {input.substr(0, at), input.substr(at + separator.size())};
}

} // namespace nnsc::fuzz

#endif // NNSC_TEST_FUZZ_FUZZSUPPORT_H

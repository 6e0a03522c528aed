//===- MappedFile.h - a read-only memory-mapped file ------------*- C++ -*-===//
//
// The one place that opens, checks and maps a file for reading: the GGUF and safetensors
// readers keep one each and read tensors in place.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SUPPORT_MAPPEDFILE_H
#define NNSC_SUPPORT_MAPPEDFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace nnsc {

class MappedFile {
public:
  /// Maps the regular file `path` read-only. On failure returns false and sets `error` to
  /// what went wrong ("cannot open: No such file or directory", "not a regular file", ...),
  /// without the path (the caller's message names it).
  bool open(const std::string &path, std::string &error);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }

  /// Drops the whole pages inside [data() + offset, data() + offset + count) from this
  /// process's resident set (MADV_DONTNEED; the bytes stay readable and read the same, from
  /// the page cache): a reader that copied a tensor out of the file need not keep its pages
  /// resident while the model loads. Partial pages at either end stay.
  void release(size_t offset, size_t count) const;

private:
  const uint8_t *bytes = nullptr;
  size_t length = 0;
};

} // namespace nnsc

#endif // NNSC_SUPPORT_MAPPEDFILE_H

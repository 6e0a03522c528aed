//===- MappedFile.cpp - a read-only memory-mapped file ----------*- C++ -*-===//

#include "nnsc/Support/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nnsc {

bool MappedFile::open(const std::string &path, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = "not a regular file";
    return false;
  }
  size_t size = size_t(st.st_size);
  // mmap refuses a length of 0; an empty file maps to nothing and reads as 0 bytes.
  void *map = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  int mapErrno = errno;
  ::close(fd);
  if (map == MAP_FAILED) {
    error = std::string("cannot map: ") + std::strerror(mapErrno);
    return false;
  }
  bytes = static_cast<const uint8_t *>(map);
  length = size;
  return true;
}

void MappedFile::release(size_t offset, size_t count) const {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t end = std::min(length, offset + count);
  const size_t first = (offset + page - 1) / page * page, last = end / page * page;
  if (bytes && first < last) // advice: a failure only leaves the pages resident
    ::madvise(const_cast<uint8_t *>(bytes) + first, last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (bytes)
    ::munmap(const_cast<uint8_t *>(bytes), length);
}

} // namespace nnsc

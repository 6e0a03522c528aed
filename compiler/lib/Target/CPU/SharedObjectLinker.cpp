//===- SharedObjectLinker.cpp - link a bundle with lld --------------------===//

#include "nnsc/Target/CPU/SharedObjectLinker.h"

#include "lld/Common/Driver.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)

namespace nnsc::cpu {

bool linkSharedObject(llvm::ArrayRef<char> object, llvm::StringRef outputPath, std::string &error) {
  llvm::SmallString<128> objectPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("nnsc-bundle", "o", fd, objectPath)) {
    error = "cannot create a temporary object file: " + ec.message();
    return false;
  }
  llvm::FileRemover remover(objectPath);
  {
    llvm::raw_fd_ostream stream(fd, /*shouldClose=*/true);
    stream.write(object.data(), object.size());
    if (stream.has_error()) {
      error = "cannot write " + objectPath.str().str();
      return false;
    }
  }
  std::string output = outputPath.str();
  // Undefined symbols are allowed: LLVM may call memcpy/memset, which the runtime process
  // provides when it dlopens the bundle.
  const char *args[] = {"ld.lld",       "-shared",         "--hash-style=gnu", "-z",  "now",
                        "-z",           "relro",           "--build-id=sha1",  "-O1", "-o",
                        output.c_str(), objectPath.c_str()};
  std::string messages;
  llvm::raw_string_ostream diagnostics(messages);
  lld::Result result =
      lld::lldMain(args, llvm::nulls(), diagnostics, {{lld::Gnu, &lld::elf::link}});
  if (result.retCode != 0) {
    error = "linking '" + output + "' failed: " + messages;
    return false;
  }
  return true;
}

} // namespace nnsc::cpu

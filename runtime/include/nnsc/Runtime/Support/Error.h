//===- Error.h - the runtime's errors ---------------------------*- C++ -*-===//
//
// The runtime's one error style (docs/Runtime.md, "Errors"): whatever a user can cause or fix
// (a model file, a bundle, a request, a setting, a missing device) is thrown as an nnsc::Error
// whose message names the thing and what is wrong with it, and is carried unchanged to the
// user: nns-run and nns-serve print it, the server answers with it, the Python package raises
// it (InvalidInput as ValueError, the others as RuntimeError). Header-only and free of torch,
// so every library, the torch-free engine bookkeeping included, throws the same types.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_SUPPORT_ERROR_H
#define NNSC_RUNTIME_SUPPORT_ERROR_H

#include <stdexcept>

namespace nnsc {

/// Base of every error the runtime reports to its user.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Input that breaks a documented contract: a prompt, a request, a param, sampling or
/// scheduler settings, a module call's operand. Python: ValueError; HTTP: 400.
class InvalidInput : public Error {
public:
  using Error::Error;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_SUPPORT_ERROR_H

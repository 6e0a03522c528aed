//===- BackendError.h - a backend that cannot be created --------*- C++ -*-===//

#ifndef NNSC_RUNTIME_BACKEND_BACKENDERROR_H
#define NNSC_RUNTIME_BACKEND_BACKENDERROR_H

#include "nnsc/Runtime/Support/Error.h"

namespace nnsc {

/// A backend that cannot run here: the message says what is missing (a library not built, no
/// device, an unsupported dtype) and what to do about it.
class BackendError : public Error {
public:
  using Error::Error;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_BACKENDERROR_H

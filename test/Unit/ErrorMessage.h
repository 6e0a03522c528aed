//===- ErrorMessage.h - the message of a LibTorch error, for tests -*- C++ -*-===//

#ifndef NNSC_TEST_UNIT_ERRORMESSAGE_H
#define NNSC_TEST_UNIT_ERRORMESSAGE_H

#include <c10/util/Exception.h>

#include <string>

namespace nnsc::test {

/// The message of the c10::Error `fn` throws (a TORCH_CHECK's text), or "no error".
template <typename Fn> std::string errorOf(Fn &&fn) {
  try {
    fn();
  } catch (const c10::Error &e) {
    return e.msg();
  }
  return "no error";
}

} // namespace nnsc::test

#endif // NNSC_TEST_UNIT_ERRORMESSAGE_H

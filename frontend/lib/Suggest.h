//===- Suggest.h - "did you mean" for unknown names -------------*- C++ -*-===//

#ifndef NNSC_FRONTEND_SUGGEST_H
#define NNSC_FRONTEND_SUGGEST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace nnsc {

/// "; did you mean 'X'?" for the candidate nearest to `name` by edit distance, or "" when
/// none is close enough to be a plausible typo.
std::string didYouMean(llvm::StringRef name, llvm::ArrayRef<std::string> candidates);

} // namespace nnsc

#endif // NNSC_FRONTEND_SUGGEST_H

//===- Suggest.cpp - "did you mean" for unknown names -----------*- C++ -*-===//

#include "Suggest.h"

namespace nnsc {

std::string didYouMean(llvm::StringRef name, llvm::ArrayRef<std::string> candidates) {
  // A third of the name's length (at least 2) catches transpositions and dropped letters
  // without proposing unrelated short names.
  unsigned best = std::max<unsigned>(2, name.size() / 3) + 1;
  const std::string *choice = nullptr;
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, /*AllowReplacements=*/true, best);
    if (d < best) {
      best = d;
      choice = &c;
    }
  }
  return choice ? "; did you mean '" + *choice + "'?" : "";
}

} // namespace nnsc

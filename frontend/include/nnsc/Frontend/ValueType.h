//===- ValueType.h - types of trace values ----------------------*- C++ -*-===//
//
// Every value of a trace is a tensor of f32, i64 or bool. A dimension is a size or a token
// dimension T; T is per prompt, so each invoke has its own (T of invoke 0 and T of invoke 1
// may differ and never broadcast against each other).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_FRONTEND_VALUETYPE_H
#define NNSC_FRONTEND_VALUETYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace nnsc {

enum class ElemType { F32, I64, Bool };

/// The token dimension T of invoke `invoke` (0 outside invokes).
constexpr int64_t tokenDim(int invoke) { return -1 - invoke; }
constexpr bool isTokenDim(int64_t dim) { return dim < 0; }
/// A sliced token dimension: dynamic, but no longer the prompt's T (printed `?`).
constexpr int64_t kSlicedTokens = -1000;
/// The context length S of an attention pattern (every position its queries see): dynamic,
/// printed `S`.
constexpr int64_t kContextTokens = -1001;

struct ValueType {
  ElemType elem = ElemType::F32;
  /// Sizes; a negative entry is a token dimension (see tokenDim).
  llvm::SmallVector<int64_t, 4> dims;

  bool operator==(const ValueType &other) const { return elem == other.elem && dims == other.dims; }
  bool isScalar() const { return dims.empty(); }
  /// "f32[T, 576]", "i64", "bool[5]".
  std::string str() const;
  /// "[T, 576]".
  std::string shapeStr() const;
};

const char *elemTypeName(ElemType elem);

/// The element type of mixed arithmetic, as in PyTorch: bool < i64 < f32.
ElemType promote(ElemType a, ElemType b);

/// NumPy broadcasting; nullopt if the shapes conflict (including T against a size other than
/// 1, and the T of two different invokes).
std::optional<llvm::SmallVector<int64_t, 4>> broadcast(llvm::ArrayRef<int64_t> lhs,
                                                       llvm::ArrayRef<int64_t> rhs);

} // namespace nnsc

#endif // NNSC_FRONTEND_VALUETYPE_H

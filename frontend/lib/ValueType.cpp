//===- ValueType.cpp - types of trace values --------------------*- C++ -*-===//

#include "nnsc/Frontend/ValueType.h"

namespace nnsc {

const char *elemTypeName(ElemType elem) {
  switch (elem) {
  case ElemType::F32:
    return "f32";
  case ElemType::I64:
    return "i64";
  case ElemType::Bool:
    return "bool";
  }
  return "?";
}

std::string ValueType::shapeStr() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ", ";
    s += dims[i] == kSlicedTokens    ? std::string("?")
         : dims[i] == kContextTokens ? std::string("S")
         : isTokenDim(dims[i])       ? std::string("T")
                                     : std::to_string(dims[i]);
  }
  return s + "]";
}

std::string ValueType::str() const {
  return std::string(elemTypeName(elem)) + (dims.empty() ? "" : shapeStr());
}

ElemType promote(ElemType a, ElemType b) {
  if (a == ElemType::F32 || b == ElemType::F32)
    return ElemType::F32;
  if (a == ElemType::I64 || b == ElemType::I64)
    return ElemType::I64;
  return ElemType::Bool;
}

std::optional<llvm::SmallVector<int64_t, 4>> broadcast(llvm::ArrayRef<int64_t> lhs,
                                                       llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t, 4> result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (a == b || b == 1)
      result[rank - 1 - i] = a;
    else if (a == 1)
      result[rank - 1 - i] = b;
    else
      return std::nullopt;
  }
  return result;
}

} // namespace nnsc

// Small c10 spellings LibTorch programs use that have no other home in graft:
//   optimizer.state()[graft::guts::to_string(p.unsafeGetTensorImpl())]     (the state's key)
//   graft::set_default_dtype(graft::scalarTypeToTypeMeta(graft::kFloat64))  (c10's TypeMeta)
// graft has no separate TypeMeta: a dtype is a DType, so scalarTypeToTypeMeta is the identity and
// get_default_dtype() (graft/core/dtype.h) compares with it as LibTorch's does.
#pragma once

#include <sstream>
#include <string>

#include "graft/core/dtype.h"

namespace graft {

using TypeMeta = DType;
inline DType scalarTypeToTypeMeta(DType dtype) { return dtype; }
inline DType typeMetaToScalarType(DType dtype) { return dtype; }

namespace guts {
// The value as an ostream writes it (a pointer as its address, "0x55d0c1a2b3c0").
template <class T>
std::string to_string(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}
}  // namespace guts

}  // namespace graft

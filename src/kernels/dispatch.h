// dtype dispatch: runs a templated lambda with the C++ type of a runtime dtype.
//   dispatch_floating(x.dtype(), "exp", [&]<class T>() { ... T is float or double ... });
// An unsupported dtype is a graft::Error naming the op (float16/bfloat16 have storage, no kernels yet).
#pragma once

#include <cstdint>
#include <string>

#include "graft/core/dtype.h"
#include "graft/core/error.h"

namespace graft::kernels {

[[noreturn]] inline void unsupported_dtype(const char* op, DType dt, const char* expected) {
  throw Error(op, expected, std::string("a ") + dtype_name(dt) + " tensor",
              std::string("convert the input with .to(graft::kFloat32)") +
                  (dt == DType::Float16 || dt == DType::BFloat16 ? " (half-precision kernels are not implemented yet)" : ""));
}

template <class F>
decltype(auto) dispatch_floating(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    default: unsupported_dtype(op, dt, "a floating-point tensor (float32 or float64)");
  }
}

// float32, float64, int64
template <class F>
decltype(auto) dispatch_numeric(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int64: return f.template operator()<int64_t>();
    default: unsupported_dtype(op, dt, "a float32, float64 or int64 tensor");
  }
}

// float32, float64, int64, bool
template <class F>
decltype(auto) dispatch_all(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Bool: return f.template operator()<bool>();
    default: unsupported_dtype(op, dt, "a float32, float64, int64 or bool tensor");
  }
}

}  // namespace graft::kernels

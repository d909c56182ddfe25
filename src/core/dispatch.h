// dtype dispatch: runs a templated lambda with the C++ type of a runtime dtype.
//   dispatch_floating(x.dtype(), "exp", [&]<class T>() { ... T is float or double ... });
// An unsupported dtype is a graft::Error naming the op. float16/bfloat16 have storage and
// conversions (dispatch_all_and_half, convert<D>), and kernels only where an op says so (the matrix
// products under autocast, relu); the arithmetic, comparisons, reductions and activations compute
// them in float32 before they reach a dispatch (Note [Half-precision compute] in
// src/ops/ops_common.h); other ops reject them with that error.
// It lives in core (a dtype switch, used by core's factory.cpp as by the kernels, ops and
// optimisers) and keeps the namespace graft::kernels, where its callers name it.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "graft/core/dtype.h"
#include "graft/core/error.h"
#include "graft/core/memory.h"
#include "graft/core/half.h"

namespace graft::kernels {

[[noreturn]] inline void unsupported_dtype(const char* op, DType dt, const char* expected) {
  throw Error(op, expected, std::string("a ") + dtype_name(dt) + " tensor",
              std::string("convert the input with .to(graft::kFloat32)") +
                  (dt == DType::Float16 || dt == DType::BFloat16
                       ? " (this op has no half-precision kernel; under graft::AutocastGuard the matrix products "
                         "return half-precision tensors: convert them before ops like this one)"
                       : ""));
}

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// static_cast<D>(v) extended to Half and BFloat16: narrowing rounds once, to nearest even, from
// the source value (Note [Half-precision conversions]); half -> bool is v != 0 (NaN is true).
template <class D, class S>
D convert(S v) {
  if constexpr (is_half_v<S>) {
    const float f = v.to_float();
    if constexpr (std::is_same_v<D, S>) return v;
    else if constexpr (is_half_v<D>) return D(f);
    else if constexpr (std::is_same_v<D, bool>) return f != 0.0f;
    else return static_cast<D>(f);
  } else if constexpr (is_half_v<D>) {
    if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) return D(v);
    else return D(static_cast<double>(v));  // int64 (exact up to 2^53, far past the formats' precision), bool
  } else if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool> && sizeof(D) < 8 &&
                       std::is_floating_point_v<S>) {
    // float -> narrow integer through int64: a value outside the narrow range wraps modulo 2^bits
    // (as PyTorch gives on x86: -1.0 -> uint8 255) instead of being undefined behaviour.
    return static_cast<D>(static_cast<int64_t>(v));
  } else {
    return static_cast<D>(v);
  }
}

template <class F>
decltype(auto) dispatch_floating(DType dt, const char* op, F&& f) {
  memory::OpScope op_scope(op);  // names the op for the memory report
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    default: unsupported_dtype(op, dt, "a floating-point tensor (float32 or float64)");
  }
}

// float32, float64, int64
template <class F>
decltype(auto) dispatch_numeric(DType dt, const char* op, F&& f) {
  memory::OpScope op_scope(op);  // names the op for the memory report
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
  memory::OpScope op_scope(op);  // names the op for the memory report
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Bool: return f.template operator()<bool>();
    default: unsupported_dtype(op, dt, "a float32, float64, int64 or bool tensor");
  }
}

// Every dtype: ops that only move or convert whole elements (copies, fills, printing). The
// integer types narrower than int64 are storage types: arithmetic computes them in int64 (Note
// [Narrow integer dtypes] in src/ops/ops_common.h).
template <class F>
decltype(auto) dispatch_all_and_half(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float16: return f.template operator()<Half>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int16: return f.template operator()<int16_t>();
    case DType::Int8: return f.template operator()<int8_t>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    default: return dispatch_all(dt, op, std::forward<F>(f));
  }
}

}  // namespace graft::kernels
